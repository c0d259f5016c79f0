#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Printing of the node tree, as LLVM 21's `printLeft`/`printRight` print it (declarators print
/// around their name: `int (*f(float))(char)`), with its rules for parentheses, pack expansion
/// and `>` inside template arguments.
extension ItaniumParser {
    // MARK: - Output

    @inline(__always) mutating func append(_ byte: UInt8) {
        output.append(byte)
    }

    mutating func append(_ text: StaticString) {
        appendBytes(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: ItaniumText) {
        switch text {
        case .literal(let literal): append(literal)
        case .input(let start, let count):
            appendBytes(UnsafeBufferPointer(rebasing: input[Int(start)..<Int(start + count)]))
        }
        if output.count > Self.maximumOutput { failed = true }
    }

    /// Appends `bytes`; short runs (most of what a name prints) byte by byte, which beats the
    /// generic bulk append.
    @inline(__always) mutating func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        if bytes.count <= 16 {
            for byte in bytes { output.append(byte) }
        } else {
            output.append(contentsOf: bytes)
        }
    }

    mutating func append(number: UInt32) {
        var digits: [UInt8] = []
        var value = number
        repeat {
            digits.append(UInt8(value % 10) + 0x30)
            value /= 10
        } while value != 0
        output.append(contentsOf: digits.reversed())
    }

    /// An opening parenthesis (or bracket); inside template arguments it hides a `>` from them.
    mutating func printOpen(_ byte: UInt8 = UInt8(ascii: "(")) {
        if insideTemplateArgs { parenDepthInTemplateArgs &+= 1 }
        append(byte)
    }

    mutating func printClose(_ byte: UInt8 = UInt8(ascii: ")")) {
        if insideTemplateArgs { parenDepthInTemplateArgs &-= 1 }
        append(byte)
    }

    func textBytes(_ text: ItaniumText) -> UnsafeBufferPointer<UInt8> {
        switch text {
        case .literal(let literal): UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        case .input(let start, let count): UnsafeBufferPointer(rebasing: input[Int(start)..<Int(start + count)])
        }
    }

    func textEquals(_ text: ItaniumText, _ literal: StaticString) -> Bool {
        textBytes(text).elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Counts a visit against the budgets; false once one is exhausted.
    @inline(__always) mutating func visit() -> Bool {
        visits += 1
        if failed || visits > Self.maximumVisits || depth > Self.maximumDepth * 2 || output.count > Self.maximumOutput {
            failed = true
            return false
        }
        return true
    }

    // MARK: - Node properties

    func precedence(_ id: ItaniumNodeID) -> ItaniumPrecedence {
        switch nodes[Int(id)] {
        case .binaryExpr(_, _, _, let p), .arraySubscriptExpr(_, _, let p), .postfixExpr(_, _, let p),
             .conditionalExpr(_, _, _, let p), .memberExpr(_, _, _, let p), .enclosingExpr(_, _, let p),
             .castExpr(_, _, _, let p), .callExpr(_, _, _, let p), .deleteExpr(_, _, _, let p),
             .prefixExpr(_, _, let p), .conversionExpr(_, _, let p), .pointerToMemberConversionExpr(_, _, let p):
            return p
        case .newExpr(let payload):
            return payload.precedence
        default:
            return .primary
        }
    }

    /// LLVM's `initializePackExpansion`: the first pack met inside an expansion sets its length.
    mutating func initializePackExpansion(_ data: ItaniumNodeList) {
        if currentPackMax == UInt32.max {
            currentPackMax = UInt32(data.count)
            currentPackIndex = 0
        }
    }

    mutating func hasRHSComponent(_ id: ItaniumNodeID) -> Bool {
        let cache = caches[Int(id)].rhsComponent.rawValue
        if cache != ItaniumCache.unknown.rawValue { return cache == ItaniumCache.yes.rawValue }
        guard visit() else { return false }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .qualType(let child, _): return hasRHSComponent(child)
        case .pointerType(let pointee), .referenceType(let pointee, _): return hasRHSComponent(pointee)
        case .pointerToMemberType(_, let member): return hasRHSComponent(member)
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            return index < UInt32(data.count) && hasRHSComponent(element(data, Int(index)))
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return false }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            return hasRHSComponent(target)
        default: return false
        }
    }

    mutating func hasArray(_ id: ItaniumNodeID) -> Bool {
        let cache = caches[Int(id)].array.rawValue
        if cache != ItaniumCache.unknown.rawValue { return cache == ItaniumCache.yes.rawValue }
        guard visit() else { return false }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .qualType(let child, _): return hasArray(child)
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            return index < UInt32(data.count) && hasArray(element(data, Int(index)))
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return false }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            return hasArray(target)
        default: return false
        }
    }

    mutating func hasFunction(_ id: ItaniumNodeID) -> Bool {
        let cache = caches[Int(id)].function.rawValue
        if cache != ItaniumCache.unknown.rawValue { return cache == ItaniumCache.yes.rawValue }
        guard visit() else { return false }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .qualType(let child, _): return hasFunction(child)
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            return index < UInt32(data.count) && hasFunction(element(data, Int(index)))
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return false }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            return hasFunction(target)
        default: return false
        }
    }

    /// The node that stands for `id` in syntax: through packs (at the current index) and forward references.
    mutating func syntaxNode(_ id: ItaniumNodeID) -> ItaniumNodeID {
        guard visit() else { return id }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            return index < UInt32(data.count) ? syntaxNode(element(data, Int(index))) : id
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return id }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            return syntaxNode(target)
        default:
            return id
        }
    }

    /// LLVM's `getBaseName`: the unqualified name a constructor or destructor is spelled with.
    func baseName(_ id: ItaniumNodeID, _ steps: Int = 0) -> ItaniumText {
        guard steps < Self.maximumDepth * 4 else { return .empty }
        switch nodes[Int(id)] {
        case .name(let text): return text
        case .abiTagAttr(let base, _): return baseName(base, steps + 1)
        case .nestedName(_, let name), .memberLikeFriendName(_, let name), .moduleEntity(_, let name),
             .qualifiedName(_, let name), .nameWithTemplateArgs(let name, _), .globalQualifiedName(let name):
            return baseName(name, steps + 1)
        case .expandedSpecialSubstitution(let kind): return Self.expandedName(kind)
        case .specialSubstitution(let kind):
            switch kind {
            case .allocator: return .literal("allocator")
            case .basicString: return .literal("basic_string")
            case .string: return .literal("string")
            case .istream: return .literal("istream")
            case .ostream: return .literal("ostream")
            case .iostream: return .literal("iostream")
            }
        default: return .empty
        }
    }

    static func expandedName(_ kind: ItaniumSpecialSubstitution) -> ItaniumText {
        switch kind {
        case .allocator: .literal("allocator")
        case .basicString, .string: .literal("basic_string")
        case .istream: .literal("basic_istream")
        case .ostream: .literal("basic_ostream")
        case .iostream: .literal("basic_iostream")
        }
    }

    @inline(__always) func element(_ list: ItaniumNodeList, _ index: Int) -> ItaniumNodeID {
        lists[Int(list.start) + index]
    }

    // MARK: - Printing

    /// `print`: the left part, then the right part when the node may have one.
    mutating func print(_ id: ItaniumNodeID) {
        printLeft(id)
        if caches[Int(id)].rhsComponent.rawValue != ItaniumCache.no.rawValue { printRight(id) }
    }

    mutating func printAsOperand(_ id: ItaniumNodeID, _ limit: ItaniumPrecedence = .default, strictlyWorse: Bool = false) {
        let paren = precedence(id).rawValue >= limit.rawValue + (strictlyWorse ? 1 : 0)
        if paren { printOpen() }
        print(id)
        if paren { printClose() }
    }

    mutating func printWithComma(_ list: ItaniumNodeList) {
        var firstElement = true
        for index in 0..<Int(list.count) {
            let beforeComma = output.count
            if !firstElement { append(", ") }
            let afterComma = output.count
            printAsOperand(element(list, index), .comma)
            // An empty pack expansion printed nothing: take its comma back.
            if afterComma == output.count {
                output.removeSubrange(beforeComma...)
                continue
            }
            firstElement = false
        }
    }

    mutating func printQualifiers(_ qualifiers: UInt8) {
        if qualifiers & ItaniumQualifier.const != 0 { append(" const") }
        if qualifiers & ItaniumQualifier.volatile != 0 { append(" volatile") }
        if qualifiers & ItaniumQualifier.restrict != 0 { append(" restrict") }
    }

    mutating func printReferenceQualifier(_ qualifier: UInt8) {
        if qualifier == 1 { append(" &") } else if qualifier == 2 { append(" &&") }
    }

    /// Collapses references to references (`&` wins unless both are `&&`); `.none` on a cycle.
    mutating func collapse(_ id: ItaniumNodeID) -> (rvalue: Bool, node: ItaniumNodeID) {
        guard case .referenceType(var node, var rvalue) = nodes[Int(id)] else { return (false, .none) }
        var previous: [ItaniumNodeID] = []
        while true {
            let syntax = syntaxNode(node)
            guard !failed, case .referenceType(let pointee, let innerRvalue) = nodes[Int(syntax)] else { break }
            node = pointee
            rvalue = rvalue && innerRvalue
            previous.append(node)
            if previous.count > 1 && node == previous[(previous.count - 1) / 2] { return (rvalue, .none) }
            if previous.count > Self.maximumVisits { failed = true; return (rvalue, .none) }
        }
        return (rvalue, node)
    }

    mutating func printLeft(_ id: ItaniumNodeID) {
        guard visit() else { return }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .nodeArray(let list):
            printWithComma(list)
        case .dotSuffix(let prefix, let suffix):
            print(prefix)
            append(" (")
            append(suffix)
            append(")")
        case .vendorExtQualType(let type, let ext, let arguments):
            print(type)
            append(" ")
            append(ext)
            if arguments != .none { print(arguments) }
        case .qualType(let child, let qualifiers):
            printLeft(child)
            printQualifiers(qualifiers)
        case .conversionOperatorType(let type):
            append("operator ")
            print(type)
        case .postfixQualifiedType(let type, let postfix):
            printLeft(type)
            append(postfix)
        case .name(let text):
            append(text)
        case .bitIntType(let size, let signed):
            if !signed { append("unsigned ") }
            append("_BitInt")
            printOpen()
            printAsOperand(size)
            printClose()
        case .elaboratedTypeSpefType(let kind, let child):
            append(kind)
            append(" ")
            print(child)
        case .transformedType(let transform, let base):
            append(transform)
            append("(")
            print(base)
            append(")")
        case .abiTagAttr(let base, let tag):
            printLeft(base)
            append("[abi:")
            append(tag)
            append("]")
        case .enableIfAttr(let conditions):
            append(" [enable_if:")
            printWithComma(conditions)
            append("]")
        case .objCProtoName(let type, let protocolName):
            print(type)
            append("<")
            append(protocolName)
            append(">")
        case .pointerType(let pointee):
            if let proto = objCObjectProtocol(pointee) {
                append("id<")
                append(proto)
                append(">")
            } else {
                printLeft(pointee)
                if hasArray(pointee) { append(" ") }
                if hasArray(pointee) || hasFunction(pointee) { append("(") }
                append("*")
            }
        case .referenceType:
            if printing[Int(id)] { return }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            let (rvalue, node) = collapse(id)
            guard node != .none else { return }
            printLeft(node)
            if hasArray(node) { append(" ") }
            if hasArray(node) || hasFunction(node) { append("(") }
            append(rvalue ? "&&" : "&")
        case .pointerToMemberType(let classType, let memberType):
            printLeft(memberType)
            if hasArray(memberType) || hasFunction(memberType) { append("(") } else { append(" ") }
            print(classType)
            append("::*")
        case .arrayType(let base, _):
            printLeft(base)
        case .functionType(let function):
            printLeft(function.returnType)
            append(" ")
        case .noexceptSpec(let expression):
            append("noexcept")
            printOpen()
            printAsOperand(expression)
            printClose()
        case .dynamicExceptionSpec(let types):
            append("throw")
            printOpen()
            printWithComma(types)
            printClose()
        case .explicitObjectParameter(let base):
            append("this ")
            print(base)
        case .functionEncoding(let function):
            if function.returnType != .none {
                printLeft(function.returnType)
                if !hasRHSComponent(function.returnType) { append(" ") }
            }
            print(function.name)
        case .literalOperator(let name):
            append("operator\"\" ")
            print(name)
        case .specialName(let special, let child):
            append(special)
            print(child)
        case .ctorVtableSpecialName(let firstType, let secondType):
            append("construction vtable for ")
            print(firstType)
            append("-in-")
            print(secondType)
        case .nestedName(let qualifier, let name), .qualifiedName(let qualifier, let name):
            print(qualifier)
            append("::")
            print(name)
        case .memberLikeFriendName(let qualifier, let name):
            print(qualifier)
            append("::friend ")
            print(name)
        case .moduleName(let parent, let name, let isPartition):
            if parent != .none { print(parent) }
            if parent != .none || isPartition { append(isPartition ? UInt8(ascii: ":") : UInt8(ascii: ".")) }
            print(name)
        case .moduleEntity(let module, let name):
            print(name)
            append("@")
            print(module)
        case .localName(let encoding, let entity):
            print(encoding)
            append("::")
            print(entity)
        case .vectorType(let base, let dimension):
            print(base)
            append(" vector[")
            if dimension != .none { print(dimension) }
            append("]")
        case .pixelVectorType(let dimension):
            append("pixel vector[")
            print(dimension)
            append("]")
        case .binaryFPType(let dimension):
            append("_Float")
            print(dimension)
        case .syntheticTemplateParamName(let kind, let index):
            switch kind {
            case 0: append("$T")
            case 1: append("$N")
            default: append("$TT")
            }
            if index > 0 { append(number: index - 1) }
        case .templateParamQualifiedArg(_, let argument):
            print(argument)
        case .typeTemplateParamDecl:
            append("typename ")
        case .constrainedTypeTemplateParamDecl(let constraint, _):
            print(constraint)
            append(" ")
        case .nonTypeTemplateParamDecl(_, let type):
            printLeft(type)
            if !hasRHSComponent(type) { append(" ") }
        case .templateTemplateParamDecl(_, let parameters, _):
            let saved = insideTemplateArgs
            insideTemplateArgs = true
            append("template<")
            printWithComma(parameters)
            append("> typename ")
            insideTemplateArgs = saved
        case .templateParamPackDecl(let parameter):
            printLeft(parameter)
            append("...")
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            if index < UInt32(data.count) { printLeft(element(data, Int(index))) }
        case .templateArgumentPack(let elements):
            printWithComma(elements)
        case .parameterPackExpansion(let child):
            printExpansion(child)
        case .templateArgs(let arguments, _):
            let saved = insideTemplateArgs
            insideTemplateArgs = true
            append("<")
            printWithComma(arguments)
            append(">")
            insideTemplateArgs = saved
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            printLeft(target)
        case .nameWithTemplateArgs(let name, let arguments):
            print(name)
            print(arguments)
        case .globalQualifiedName(let child):
            append("::")
            print(child)
        case .expandedSpecialSubstitution(let kind):
            append("std::")
            append(Self.expandedName(kind))
            if kind.isInstantiation {
                append("<char, std::char_traits<char>")
                if kind == .string { append(", std::allocator<char>") }
                append(">")
            }
        case .specialSubstitution:
            append("std::")
            append(baseName(id))
        case .ctorDtorName(let base, let isDestructor):
            if isDestructor { append("~") }
            append(baseName(base))
        case .dtorName(let base):
            append("~")
            printLeft(base)
        case .unnamedTypeName(let count):
            append("'unnamed")
            append(count)
            append("'")
        case .closureTypeName(let closure):
            append("'lambda")
            append(closure.count)
            append("'")
            printClosureDeclarator(closure)
        case .structuredBindingName(let bindings):
            printOpen(UInt8(ascii: "["))
            printWithComma(bindings)
            printClose(UInt8(ascii: "]"))
        case .binaryExpr(let lhs, let infix, let rhs, let p):
            let isGreater = textEquals(infix, ">") || textEquals(infix, ">>")
            // LLVM 21 parenthesises `>` and `>>` everywhere but inside parentheses within
            // template arguments.
            let parenAll = parenDepthInTemplateArgs == 0 && isGreater
            if parenAll { printOpen() }
            let isAssign = p == .assign
            printAsOperand(lhs, isAssign ? .orIf : p, strictlyWorse: !isAssign)
            if !textEquals(infix, ",") { append(" ") }
            append(infix)
            append(" ")
            printAsOperand(rhs, p, strictlyWorse: isAssign)
            if parenAll { printClose() }
        case .arraySubscriptExpr(let base, let index, let p):
            printAsOperand(base, p)
            printOpen(UInt8(ascii: "["))
            printAsOperand(index)
            printClose(UInt8(ascii: "]"))
        case .postfixExpr(let child, let op, let p):
            printAsOperand(child, p, strictlyWorse: true)
            append(op)
        case .conditionalExpr(let condition, let then, let otherwise, let p):
            printAsOperand(condition, p)
            append(" ? ")
            printAsOperand(then)
            append(" : ")
            printAsOperand(otherwise, .assign, strictlyWorse: true)
        case .memberExpr(let lhs, let kind, let rhs, let p):
            printAsOperand(lhs, p, strictlyWorse: true)
            append(kind)
            printAsOperand(rhs, p, strictlyWorse: false)
        case .subobjectExpr(let type, let subExpr, let offset):
            print(subExpr)
            append(".<")
            print(type)
            append(" at offset ")
            let bytes = textBytes(offset)
            if bytes.isEmpty {
                append("0")
            } else if bytes[0] == UInt8(ascii: "n") {
                append("-")
                output.append(contentsOf: bytes.dropFirst())
            } else {
                output.append(contentsOf: bytes)
            }
            append(">")
        case .enclosingExpr(let prefix, let infix, _):
            append(prefix)
            printOpen()
            print(infix)
            printClose()
        case .castExpr(let kind, let to, let from, _):
            append(kind)
            let saved = insideTemplateArgs
            insideTemplateArgs = true
            append("<")
            printLeft(to)
            append(">")
            insideTemplateArgs = saved
            printOpen()
            printAsOperand(from)
            printClose()
        case .sizeofParamPackExpr(let pack):
            append("sizeof...")
            printOpen()
            printExpansion(pack)
            printClose()
        case .callExpr(let callee, let arguments, let isParen, _):
            if isParen { printOpen() }
            print(callee)
            if isParen { printClose() }
            printOpen()
            printWithComma(arguments)
            printClose()
        case .newExpr(let new):
            if new.isGlobal { append("::") }
            append("new")
            if new.isArray { append("[]") }
            if new.expressions.count != 0 {
                printOpen()
                printWithComma(new.expressions)
                printClose()
            }
            append(" ")
            print(new.type)
            if new.inits.count != 0 {
                printOpen()
                printWithComma(new.inits)
                printClose()
            }
        case .deleteExpr(let operand, let isGlobal, let isArray, _):
            if isGlobal { append("::") }
            append("delete")
            if isArray { append("[]") }
            append(" ")
            print(operand)
        case .prefixExpr(let prefix, let child, let p):
            append(prefix)
            printAsOperand(child, p)
        case .functionParam(let number):
            append("fp")
            append(number)
        case .conversionExpr(let type, let expressions, _):
            printOpen()
            print(type)
            printClose()
            printOpen()
            printWithComma(expressions)
            printClose()
        case .pointerToMemberConversionExpr(let type, let subExpr, _):
            printOpen()
            print(type)
            printClose()
            printOpen()
            print(subExpr)
            printClose()
        case .initListExpr(let type, let inits):
            if type != .none {
                if printInitListAsType(type, inits) { return }
                print(type)
            }
            append("{")
            printWithComma(inits)
            append("}")
        case .bracedExpr(let element, let initializer, let isArray):
            if isArray {
                append("[")
                print(element)
                append("]")
            } else {
                append(".")
                print(element)
            }
            if !isBraced(initializer) { append(" = ") }
            print(initializer)
        case .bracedRangeExpr(let begin, let end, let initializer):
            append("[")
            print(begin)
            append(" ... ")
            print(end)
            append("]")
            if !isBraced(initializer) { append(" = ") }
            print(initializer)
        case .foldExpr(let isLeftFold, let op, let pack, let initializer):
            printOpen()
            if !isLeftFold || initializer != .none {
                if isLeftFold {
                    printAsOperand(initializer, .cast, strictlyWorse: true)
                } else {
                    printFoldPack(pack)
                }
                append(" ")
                append(op)
                append(" ")
            }
            append("...")
            if isLeftFold || initializer != .none {
                append(" ")
                append(op)
                append(" ")
                if isLeftFold {
                    printFoldPack(pack)
                } else {
                    printAsOperand(initializer, .cast, strictlyWorse: true)
                }
            }
            printClose()
        case .throwExpr(let operand):
            append("throw ")
            print(operand)
        case .boolExpr(let value):
            append(value ? "true" : "false")
        case .stringLiteral(let type):
            append("\"<")
            print(type)
            append(">\"")
        case .lambdaExpr(let type):
            append("[]")
            if case .closureTypeName(let closure) = nodes[Int(type)] { printClosureDeclarator(closure) }
            append("{...}")
        case .enumLiteral(let type, let integer):
            printOpen()
            print(type)
            printClose()
            printSignedNumber(integer)
        case .integerLiteral(let type, let value):
            let typeLength = textBytes(type).count
            if typeLength > 3 {
                printOpen()
                append(type)
                printClose()
            }
            printSignedNumber(value)
            if typeLength <= 3 { append(type) }
        case .requiresExpr(let parameters, let requirements):
            append("requires")
            if parameters.count != 0 {
                append(" ")
                printOpen()
                printWithComma(parameters)
                printClose()
            }
            append(" ")
            printOpen(UInt8(ascii: "{"))
            for index in 0..<Int(requirements.count) { print(element(requirements, index)) }
            append(" ")
            printClose(UInt8(ascii: "}"))
        case .exprRequirement(let expression, let isNoexcept, let typeConstraint):
            append(" ")
            let braced = isNoexcept || typeConstraint != .none
            if braced { printOpen(UInt8(ascii: "{")) }
            print(expression)
            if braced { printClose(UInt8(ascii: "}")) }
            if isNoexcept { append(" noexcept") }
            if typeConstraint != .none {
                append(" -> ")
                print(typeConstraint)
            }
            append(";")
        case .typeRequirement(let type):
            append(" typename ")
            print(type)
            append(";")
        case .nestedRequirement(let constraint):
            append(" requires ")
            print(constraint)
            append(";")
        case .floatLiteral(let kind, let contents):
            printFloat(kind, contents)
        }
        if output.count > Self.maximumOutput { failed = true }
    }

    mutating func printRight(_ id: ItaniumNodeID) {
        guard visit() else { return }
        depth += 1
        defer { depth -= 1 }
        switch nodes[Int(id)] {
        case .qualType(let child, _):
            printRight(child)
        case .pointerType(let pointee):
            if objCObjectProtocol(pointee) == nil {
                if hasArray(pointee) || hasFunction(pointee) { append(")") }
                printRight(pointee)
            }
        case .referenceType:
            if printing[Int(id)] { return }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            let (_, node) = collapse(id)
            guard node != .none else { return }
            if hasArray(node) || hasFunction(node) { append(")") }
            printRight(node)
        case .pointerToMemberType(_, let memberType):
            if hasArray(memberType) || hasFunction(memberType) { append(")") }
            printRight(memberType)
        case .arrayType(let base, let dimension):
            if output.last != UInt8(ascii: "]") { append(" ") }
            append("[")
            if dimension != .none { print(dimension) }
            append("]")
            printRight(base)
        case .functionType(let function):
            printOpen()
            printWithComma(function.parameters)
            printClose()
            printRight(function.returnType)
            printQualifiers(function.qualifiers)
            printReferenceQualifier(function.referenceQualifier)
            if function.exceptionSpec != .none {
                append(" ")
                print(function.exceptionSpec)
            }
        case .functionEncoding(let function):
            printOpen()
            printWithComma(function.parameters)
            printClose()
            if function.returnType != .none { printRight(function.returnType) }
            printQualifiers(function.qualifiers)
            printReferenceQualifier(function.referenceQualifier)
            if function.attributes != .none { print(function.attributes) }
            if function.requires != .none {
                append(" requires ")
                print(function.requires)
            }
        case .typeTemplateParamDecl(let name):
            print(name)
        case .constrainedTypeTemplateParamDecl(_, let name):
            print(name)
        case .nonTypeTemplateParamDecl(let name, let type):
            print(name)
            printRight(type)
        case .templateTemplateParamDecl(let name, _, let requires):
            print(name)
            if requires != .none {
                append(" requires ")
                print(requires)
            }
        case .templateParamPackDecl(let parameter):
            printRight(parameter)
        case .parameterPack(let data):
            initializePackExpansion(data)
            let index = currentPackIndex
            if index < UInt32(data.count) { printRight(element(data, Int(index))) }
        case .forwardTemplateReference(_, let target):
            if printing[Int(id)] || target == .none { return }
            printing[Int(id)] = true
            defer { printing[Int(id)] = false }
            printRight(target)
        default:
            break
        }
    }

    /// A pack expansion: the child once per element of the first pack inside it, comma-separated;
    /// `...` after it when it has no pack; nothing for an empty pack.
    mutating func printExpansion(_ child: ItaniumNodeID) {
        let savedIndex = currentPackIndex
        let savedMax = currentPackMax
        currentPackIndex = UInt32.max
        currentPackMax = UInt32.max
        defer {
            currentPackIndex = savedIndex
            currentPackMax = savedMax
        }
        let streamPosition = output.count
        print(child)
        if currentPackMax == UInt32.max {
            append("...")
            return
        }
        if currentPackMax == 0 {
            output.removeSubrange(streamPosition...)
            return
        }
        var index: UInt32 = 1
        while index < currentPackMax && !failed {
            append(", ")
            currentPackIndex = index
            print(child)
            index += 1
        }
    }

    mutating func printFoldPack(_ pack: ItaniumNodeID) {
        printOpen()
        printExpansion(pack)
        printClose()
    }

    mutating func printClosureDeclarator(_ closure: ItaniumClosure) {
        if closure.templateParameters.count != 0 {
            let saved = insideTemplateArgs
            insideTemplateArgs = true
            append("<")
            printWithComma(closure.templateParameters)
            append(">")
            insideTemplateArgs = saved
        }
        if closure.requires1 != .none {
            append(" requires ")
            print(closure.requires1)
            append(" ")
        }
        printOpen()
        printWithComma(closure.parameters)
        printClose()
        if closure.requires2 != .none {
            append(" requires ")
            print(closure.requires2)
        }
    }

    func isBraced(_ id: ItaniumNodeID) -> Bool {
        switch nodes[Int(id)] {
        case .bracedExpr, .bracedRangeExpr: true
        default: false
        }
    }

    /// The protocol of `objc_object<P>`, which a pointer prints as `id<P>`.
    func objCObjectProtocol(_ pointee: ItaniumNodeID) -> ItaniumText? {
        guard case .objCProtoName(let type, let proto) = nodes[Int(pointee)],
              case .name(let name) = nodes[Int(type)], textEquals(name, "objc_object") else { return nil }
        return proto
    }

    mutating func printSignedNumber(_ value: ItaniumText) {
        let bytes = textBytes(value)
        if bytes.first == UInt8(ascii: "n") {
            append("-")
            output.append(contentsOf: bytes.dropFirst())
        } else {
            output.append(contentsOf: bytes)
        }
    }

    /// An array of small integer literals as a string literal (`char[N]{…}`), or false with
    /// nothing printed.
    mutating func printInitListAsType(_ type: ItaniumNodeID, _ elements: ItaniumNodeList) -> Bool {
        guard case .arrayType(let base, _) = nodes[Int(type)], case .name(let name) = nodes[Int(base)],
              textEquals(name, "char") else { return false }
        let start = output.count
        append("\"")
        var lastWasNumericEscape = false
        for index in 0..<Int(elements.count) {
            guard case .integerLiteral(_, let value) = nodes[Int(element(elements, index))] else {
                output.removeSubrange(start...)
                return false
            }
            var integer = 0
            for byte in textBytes(value) {
                guard Self.isDigit(byte), integer <= 25 else {
                    output.removeSubrange(start...)
                    return false
                }
                integer = integer * 10 + Int(byte - 0x30)
            }
            guard integer <= 255 else {
                output.removeSubrange(start...)
                return false
            }
            if lastWasNumericEscape && ((integer >= 0x30 && integer <= 0x39) || (integer >= 0x61 && integer <= 0x66)
                || (integer >= 0x41 && integer <= 0x46)) {
                append("\"\"")
            }
            lastWasNumericEscape = false
            switch integer {
            case 7: append("\\a")
            case 8: append("\\b")
            case 12: append("\\f")
            case 10: append("\\n")
            case 13: append("\\r")
            case 9: append("\\t")
            case 11: append("\\v")
            case 0x22: append("\\\"")
            case 0x5C: append("\\\\")
            default:
                if integer < 32 || integer == 127 {
                    let hex: StaticString = "0123456789ABCDEF"
                    append(UInt8(ascii: "\\"))
                    if integer > 7 { append(UInt8(ascii: "x")) }
                    if integer >= 16 { append(hex.utf8Start[integer >> 4]) }
                    append(hex.utf8Start[integer & 0xF])
                    lastWasNumericEscape = true
                } else {
                    append(UInt8(integer))
                }
            }
        }
        append("\"")
        return true
    }

    /// A floating literal in C's `%a` form (`%af` for float, `%LaL` for long double), as LLVM
    /// prints it with `snprintf`.
    mutating func printFloat(_ kind: ItaniumFloatKind, _ contents: ItaniumText) {
        let hex = textBytes(contents)
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < hex.count {
            func digit(_ byte: UInt8) -> UInt8 { Self.isDigit(byte) ? byte - 0x30 : byte - UInt8(ascii: "a") + 10 }
            bytes.append(digit(hex[index]) << 4 | digit(hex[index + 1]))
            index += 2
        }
        bytes.reverse()  // the mangling is big-endian; this machine is little-endian
        var buffer = [CChar](repeating: 0, count: 64)
        let written: Int32
        switch kind {
        case .float:
            var bits: UInt32 = 0
            for (offset, byte) in bytes.prefix(4).enumerated() { bits |= UInt32(byte) << (8 * offset) }
            let value = Double(Float(bitPattern: bits))
            written = withVaList([value]) { vsnprintf(&buffer, 64, "%af", $0) }
        case .double:
            var bits: UInt64 = 0
            for (offset, byte) in bytes.prefix(8).enumerated() { bits |= UInt64(byte) << (8 * offset) }
            let value = Double(bitPattern: bits)
            written = withVaList([value]) { vsnprintf(&buffer, 64, "%a", $0) }
        case .longDouble:
            #if arch(x86_64) || arch(i386)
            var value: Float80 = 0
            withUnsafeMutableBytes(of: &value) { raw in
                for (offset, byte) in bytes.prefix(10).enumerated() { raw[offset] = byte }
            }
            written = withVaList([value]) { vsnprintf(&buffer, 64, "%LaL", $0) }
            #else
            written = 0
            #endif
        }
        guard written > 0 else { return }
        for byte in buffer.prefix(min(Int(written), 63)) { append(UInt8(bitPattern: byte)) }
    }
}
