/// Types and expressions of the Itanium grammar (Itanium C++ ABI §5.1.5, §5.1.6), read as LLVM 21
/// reads them.
extension ItaniumParser {
    // MARK: - Types

    /// `<type>`: builtin, qualified, function, class/enum, array, pointer-to-member, template
    /// parameter, decltype, pointer, reference, complex, imaginary, pack expansion, vector, or a
    /// substitution. Every type but builtins and substitutions becomes a substitution candidate.
    mutating func parseType() -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        var result = ItaniumNodeID.none
        switch look() {
        case UInt8(ascii: "r"), UInt8(ascii: "V"), UInt8(ascii: "K"):
            var afterQualifiers = 0
            if look(afterQualifiers) == UInt8(ascii: "r") { afterQualifiers += 1 }
            if look(afterQualifiers) == UInt8(ascii: "V") { afterQualifiers += 1 }
            if look(afterQualifiers) == UInt8(ascii: "K") { afterQualifiers += 1 }
            let next = look(afterQualifiers)
            let after = look(afterQualifiers + 1)
            if next == UInt8(ascii: "F") || (next == UInt8(ascii: "D") && (after == UInt8(ascii: "o")
                || after == UInt8(ascii: "O") || after == UInt8(ascii: "w") || after == UInt8(ascii: "x"))) {
                result = parseFunctionType()
            } else {
                result = parseQualifiedType()
            }
        case UInt8(ascii: "U"):
            result = parseQualifiedType()
        case UInt8(ascii: "v"): first += 1; return makeName("void")
        case UInt8(ascii: "w"): first += 1; return makeName("wchar_t")
        case UInt8(ascii: "b"): first += 1; return makeName("bool")
        case UInt8(ascii: "c"): first += 1; return makeName("char")
        case UInt8(ascii: "a"): first += 1; return makeName("signed char")
        case UInt8(ascii: "h"): first += 1; return makeName("unsigned char")
        case UInt8(ascii: "s"): first += 1; return makeName("short")
        case UInt8(ascii: "t"): first += 1; return makeName("unsigned short")
        case UInt8(ascii: "i"): first += 1; return makeName("int")
        case UInt8(ascii: "j"): first += 1; return makeName("unsigned int")
        case UInt8(ascii: "l"): first += 1; return makeName("long")
        case UInt8(ascii: "m"): first += 1; return makeName("unsigned long")
        case UInt8(ascii: "x"): first += 1; return makeName("long long")
        case UInt8(ascii: "y"): first += 1; return makeName("unsigned long long")
        case UInt8(ascii: "n"): first += 1; return makeName("__int128")
        case UInt8(ascii: "o"): first += 1; return makeName("unsigned __int128")
        case UInt8(ascii: "f"): first += 1; return makeName("float")
        case UInt8(ascii: "d"): first += 1; return makeName("double")
        case UInt8(ascii: "e"): first += 1; return makeName("long double")
        case UInt8(ascii: "g"): first += 1; return makeName("__float128")
        case UInt8(ascii: "z"): first += 1; return makeName("...")
        case UInt8(ascii: "u"):
            first += 1
            let name = parseBareSourceName()
            if name.isEmpty { return .none }
            // Vendor extended types are substitution candidates (Itanium C++ ABI 5.9.1).
            if consumeIf(UInt8(ascii: "I")) {
                let base = parseType()
                guard base != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
                result = make(.transformedType(transform: text(name), base: base))
            } else {
                result = make(.name(text(name)))
            }
        case UInt8(ascii: "D"):
            switch look(1) {
            case UInt8(ascii: "d"): first += 2; return makeName("decimal64")
            case UInt8(ascii: "e"): first += 2; return makeName("decimal128")
            case UInt8(ascii: "f"): first += 2; return makeName("decimal32")
            case UInt8(ascii: "h"): first += 2; return makeName("half")
            case UInt8(ascii: "F"):
                first += 2
                if consumeIf("16b") { return makeName("std::bfloat16_t") }
                let dimension = make(.name(text(parseNumber())))
                guard consumeIf(UInt8(ascii: "_")) else { return .none }
                return make(.binaryFPType(dimension))
            case UInt8(ascii: "A"):
                let size = look(2)
                first = min(first + 3, last)
                switch size {
                case UInt8(ascii: "s"): return makeName("short _Accum")
                case UInt8(ascii: "t"): return makeName("unsigned short _Accum")
                case UInt8(ascii: "i"): return makeName("_Accum")
                case UInt8(ascii: "j"): return makeName("unsigned _Accum")
                case UInt8(ascii: "l"): return makeName("long _Accum")
                case UInt8(ascii: "m"): return makeName("unsigned long _Accum")
                default: return .none
                }
            case UInt8(ascii: "R"):
                let size = look(2)
                first = min(first + 3, last)
                switch size {
                case UInt8(ascii: "s"): return makeName("short _Fract")
                case UInt8(ascii: "t"): return makeName("unsigned short _Fract")
                case UInt8(ascii: "i"): return makeName("_Fract")
                case UInt8(ascii: "j"): return makeName("unsigned _Fract")
                case UInt8(ascii: "l"): return makeName("long _Fract")
                case UInt8(ascii: "m"): return makeName("unsigned long _Fract")
                default: return .none
                }
            case UInt8(ascii: "S"):
                first += 2
                guard look() == UInt8(ascii: "D") else { return .none }
                let which = look(1)
                let size = look(2)
                if which == UInt8(ascii: "A") {
                    first = min(first + 3, last)
                    switch size {
                    case UInt8(ascii: "s"): return makeName("_Sat short _Accum")
                    case UInt8(ascii: "t"): return makeName("_Sat unsigned short _Accum")
                    case UInt8(ascii: "i"): return makeName("_Sat _Accum")
                    case UInt8(ascii: "j"): return makeName("_Sat unsigned _Accum")
                    case UInt8(ascii: "l"): return makeName("_Sat long _Accum")
                    case UInt8(ascii: "m"): return makeName("_Sat unsigned long _Accum")
                    default: return .none
                    }
                }
                if which == UInt8(ascii: "R") {
                    first = min(first + 3, last)
                    switch size {
                    case UInt8(ascii: "s"): return makeName("_Sat short _Fract")
                    case UInt8(ascii: "t"): return makeName("_Sat unsigned short _Fract")
                    case UInt8(ascii: "i"): return makeName("_Sat _Fract")
                    case UInt8(ascii: "j"): return makeName("_Sat unsigned _Fract")
                    case UInt8(ascii: "l"): return makeName("_Sat long _Fract")
                    case UInt8(ascii: "m"): return makeName("_Sat unsigned long _Fract")
                    default: return .none
                    }
                }
                return .none
            case UInt8(ascii: "B"), UInt8(ascii: "U"):
                let signed = look(1) == UInt8(ascii: "B")
                first += 2
                let size = Self.isDigit(look()) ? make(.name(text(parseNumber()))) : parseExpr()
                guard size != .none, consumeIf(UInt8(ascii: "_")) else { return .none }
                return make(.bitIntType(size: size, signed: signed))
            case UInt8(ascii: "i"): first += 2; return makeName("char32_t")
            case UInt8(ascii: "s"): first += 2; return makeName("char16_t")
            case UInt8(ascii: "u"): first += 2; return makeName("char8_t")
            case UInt8(ascii: "a"): first += 2; return makeName("auto")
            case UInt8(ascii: "c"): first += 2; return makeName("decltype(auto)")
            case UInt8(ascii: "k"), UInt8(ascii: "K"):
                let kind: StaticString = look(1) == UInt8(ascii: "k") ? " auto" : " decltype(auto)"
                first += 2
                let constraint = parseName()
                guard constraint != .none else { return .none }
                return make(.postfixQualifiedType(type: constraint, postfix: .literal(kind)))
            case UInt8(ascii: "n"): first += 2; return makeName("std::nullptr_t")
            case UInt8(ascii: "t"), UInt8(ascii: "T"):
                result = parseDecltype()
            case UInt8(ascii: "v"):
                result = parseVectorType()
            case UInt8(ascii: "p"):
                first += 2
                let child = parseType()
                guard child != .none else { return .none }
                result = make(.parameterPackExpansion(child))
            case UInt8(ascii: "o"), UInt8(ascii: "O"), UInt8(ascii: "w"), UInt8(ascii: "x"):
                result = parseFunctionType()
            default:
                break
            }
        case UInt8(ascii: "F"):
            result = parseFunctionType()
        case UInt8(ascii: "A"):
            result = parseArrayType()
        case UInt8(ascii: "M"):
            result = parsePointerToMemberType()
        case UInt8(ascii: "T"):
            let next = look(1)
            if next == UInt8(ascii: "s") || next == UInt8(ascii: "u") || next == UInt8(ascii: "e") {
                result = parseClassEnumType()
                break
            }
            result = parseTemplateParam()
            guard result != .none else { return .none }
            if tryToParseTemplateArgs && look() == UInt8(ascii: "I") {
                substitutions.append(result)
                let arguments = parseTemplateArgs()
                guard arguments != .none else { return .none }
                result = make(.nameWithTemplateArgs(name: result, arguments: arguments))
            }
        case UInt8(ascii: "P"):
            first += 1
            let pointee = parseType()
            guard pointee != .none else { return .none }
            result = makePointer(pointee)
        case UInt8(ascii: "R"), UInt8(ascii: "O"):
            let rvalue = look() == UInt8(ascii: "O")
            first += 1
            let pointee = parseType()
            guard pointee != .none else { return .none }
            result = make(.referenceType(pointee: pointee, rvalue: rvalue),
                          ItaniumCaches(rhsComponent: caches[Int(pointee)].rhsComponent, array: .no, function: .no))
        case UInt8(ascii: "C"):
            first += 1
            let type = parseType()
            guard type != .none else { return .none }
            result = make(.postfixQualifiedType(type: type, postfix: .literal(" complex")))
        case UInt8(ascii: "G"):
            first += 1
            let type = parseType()
            guard type != .none else { return .none }
            result = make(.postfixQualifiedType(type: type, postfix: .literal(" imaginary")))
        case UInt8(ascii: "S") where look(1) != UInt8(ascii: "t"):
            var isSubstitution = false
            result = parseUnscopedName(state: -1, isSubstitution: &isSubstitution)
            guard result != .none else { return .none }
            if look() == UInt8(ascii: "I") && (!isSubstitution || tryToParseTemplateArgs) {
                if !isSubstitution { substitutions.append(result) }
                let arguments = parseTemplateArgs()
                guard arguments != .none else { return .none }
                result = make(.nameWithTemplateArgs(name: result, arguments: arguments))
            } else if isSubstitution {
                return result
            }
        default:
            result = parseClassEnumType()
        }
        if result != .none { substitutions.append(result) }
        return result
    }

    /// `<function-type> ::= [<CV-qualifiers>] [<exception-spec>] [Dx] F [Y] <bare-function-type> [<ref-qualifier>] E`.
    mutating func parseFunctionType() -> ItaniumNodeID {
        let qualifiers = parseCVQualifiers()
        var exceptionSpec = ItaniumNodeID.none
        if consumeIf(UInt8(ascii: "D"), UInt8(ascii: "o")) {
            exceptionSpec = makeName("noexcept")
        } else if consumeIf(UInt8(ascii: "D"), UInt8(ascii: "O")) {
            let expression = parseExpr()
            guard expression != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
            exceptionSpec = make(.noexceptSpec(expression))
        } else if consumeIf(UInt8(ascii: "D"), UInt8(ascii: "w")) {
            let begin = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let type = parseType()
                guard type != .none else { return .none }
                names.append(type)
            }
            exceptionSpec = make(.dynamicExceptionSpec(popTrailingNodeArray(begin)))
        }
        _ = consumeIf(UInt8(ascii: "D"), UInt8(ascii: "x"))
        guard consumeIf(UInt8(ascii: "F")) else { return .none }
        _ = consumeIf(UInt8(ascii: "Y"))
        let returnType = parseType()
        guard returnType != .none else { return .none }
        var referenceQualifier: UInt8 = 0
        let begin = names.count
        while true {
            if consumeIf(UInt8(ascii: "E")) { break }
            if consumeIf(UInt8(ascii: "v")) { continue }
            if consumeIf(UInt8(ascii: "R"), UInt8(ascii: "E")) {
                referenceQualifier = 1
                break
            }
            if consumeIf(UInt8(ascii: "O"), UInt8(ascii: "E")) {
                referenceQualifier = 2
                break
            }
            let type = parseType()
            guard type != .none else { return .none }
            names.append(type)
        }
        let parameters = popTrailingNodeArray(begin)
        return make(.functionType(ItaniumFunctionType(
            returnType: returnType, parameters: parameters, qualifiers: qualifiers,
            referenceQualifier: referenceQualifier, exceptionSpec: exceptionSpec)), Self.functionLike)
    }

    /// `<vector-type> ::= Dv <number> _ <type> | Dv <number> _ p | Dv [<expression>] _ <type>`.
    mutating func parseVectorType() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "D"), UInt8(ascii: "v")) else { return .none }
        if look() >= UInt8(ascii: "1") && look() <= UInt8(ascii: "9") {
            let dimension = make(.name(text(parseNumber())))
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            if consumeIf(UInt8(ascii: "p")) { return make(.pixelVectorType(dimension)) }
            let element = parseType()
            guard element != .none else { return .none }
            return make(.vectorType(base: element, dimension: dimension))
        }
        if !consumeIf(UInt8(ascii: "_")) {
            let dimension = parseExpr()
            guard dimension != .none, consumeIf(UInt8(ascii: "_")) else { return .none }
            let element = parseType()
            guard element != .none else { return .none }
            return make(.vectorType(base: element, dimension: dimension))
        }
        let element = parseType()
        guard element != .none else { return .none }
        return make(.vectorType(base: element, dimension: .none))
    }

    /// `<decltype> ::= Dt <expression> E | DT <expression> E`.
    mutating func parseDecltype() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "D")) else { return .none }
        guard consumeIf(UInt8(ascii: "t")) || consumeIf(UInt8(ascii: "T")) else { return .none }
        let expression = parseExpr()
        guard expression != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
        return make(.enclosingExpr(prefix: .literal("decltype"), infix: expression, precedence: .primary))
    }

    /// `<array-type> ::= A <number> _ <type> | A [<expression>] _ <type>`.
    mutating func parseArrayType() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "A")) else { return .none }
        var dimension = ItaniumNodeID.none
        if Self.isDigit(look()) {
            dimension = make(.name(text(parseNumber())))
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
        } else if !consumeIf(UInt8(ascii: "_")) {
            dimension = parseExpr()
            guard dimension != .none, consumeIf(UInt8(ascii: "_")) else { return .none }
        }
        let type = parseType()
        guard type != .none else { return .none }
        return make(.arrayType(base: type, dimension: dimension), ItaniumCaches(rhsComponent: .yes, array: .yes, function: .no))
    }

    /// `<pointer-to-member-type> ::= M <class type> <member type>`.
    mutating func parsePointerToMemberType() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "M")) else { return .none }
        let classType = parseType()
        guard classType != .none else { return .none }
        let memberType = parseType()
        guard memberType != .none else { return .none }
        return make(.pointerToMemberType(classType: classType, memberType: memberType),
                    ItaniumCaches(rhsComponent: caches[Int(memberType)].rhsComponent, array: .no, function: .no))
    }

    /// `<class-enum-type> ::= <name> | Ts <name> | Tu <name> | Te <name>`.
    mutating func parseClassEnumType() -> ItaniumNodeID {
        var elaboration: StaticString? = nil
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "s")) {
            elaboration = "struct"
        } else if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "u")) {
            elaboration = "union"
        } else if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "e")) {
            elaboration = "enum"
        }
        let name = parseName()
        guard name != .none else { return .none }
        if let elaboration { return make(.elaboratedTypeSpefType(kind: .literal(elaboration), child: name)) }
        return name
    }

    /// `<qualified-type> ::= <qualifiers> <type>`, with vendor qualifiers (`U <name> [<args>]`)
    /// and Objective-C protocol qualifiers (`U…objcproto…`).
    mutating func parseQualifiedType() -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        if consumeIf(UInt8(ascii: "U")) {
            let qualifier = parseBareSourceName()
            if qualifier.isEmpty { return .none }
            let prefix = "objcproto".utf8
            if qualifier.count >= 9 && input[qualifier.lowerBound..<(qualifier.lowerBound + 9)].elementsEqual(prefix) {
                // The protocol is itself a source name inside the qualifier.
                var inner = ItaniumParser(UnsafeBufferPointer(rebasing: input[(qualifier.lowerBound + 9)..<qualifier.upperBound]))
                let proto = inner.parseBareSourceName()
                if proto.isEmpty { return .none }
                let offset = qualifier.lowerBound + 9
                let child = parseQualifiedType()
                guard child != .none else { return .none }
                return make(.objCProtoName(type: child, protocolName: inputText(from: proto.lowerBound + offset, to: proto.upperBound + offset)))
            }
            var arguments = ItaniumNodeID.none
            if look() == UInt8(ascii: "I") {
                arguments = parseTemplateArgs()
                guard arguments != .none else { return .none }
            }
            let child = parseQualifiedType()
            guard child != .none else { return .none }
            return make(.vendorExtQualType(type: child, ext: text(qualifier), arguments: arguments))
        }
        let qualifiers = parseCVQualifiers()
        var type = parseType()
        guard type != .none else { return .none }
        if qualifiers != 0 { type = makeQualType(type, qualifiers) }
        return type
    }

    // MARK: - Expressions

    mutating func parsePrefixExpr(_ kind: StaticString, _ precedence: ItaniumPrecedence) -> ItaniumNodeID {
        let expression = parseExpr()
        guard expression != .none else { return .none }
        return make(.prefixExpr(prefix: .literal(kind), child: expression, precedence: precedence))
    }

    mutating func parseBinaryExpr(_ kind: StaticString, _ precedence: ItaniumPrecedence) -> ItaniumNodeID {
        let lhs = parseExpr()
        guard lhs != .none else { return .none }
        let rhs = parseExpr()
        guard rhs != .none else { return .none }
        return make(.binaryExpr(lhs: lhs, infix: .literal(kind), rhs: rhs, precedence: precedence))
    }

    mutating func parseIntegerLiteral(_ type: StaticString) -> ItaniumNodeID {
        let value = parseNumber(allowNegative: true)
        guard !value.isEmpty, consumeIf(UInt8(ascii: "E")) else { return .none }
        return make(.integerLiteral(type: .literal(type), value: text(value)))
    }

    /// `<function-param> ::= fpT | fp <CV> [<n>] _ | fL <n> p <CV> [<n>] _`.
    mutating func parseFunctionParam() -> ItaniumNodeID {
        if consumeIf("fpT") { return makeName("this") }
        if consumeIf(UInt8(ascii: "f"), UInt8(ascii: "p")) {
            _ = parseCVQualifiers()
            let number = parseNumber()
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            return make(.functionParam(text(number)))
        }
        if consumeIf(UInt8(ascii: "f"), UInt8(ascii: "L")) {
            if parseNumber().isEmpty { return .none }
            guard consumeIf(UInt8(ascii: "p")) else { return .none }
            _ = parseCVQualifiers()
            let number = parseNumber()
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            return make(.functionParam(text(number)))
        }
        return .none
    }

    /// `<expr-primary> ::= L <type> <value> E | L <string type> E | L <mangled-name> E | LDn[0]E | L <lambda> E`.
    mutating func parseExprPrimary() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "L")) else { return .none }
        switch look() {
        case UInt8(ascii: "w"): first += 1; return parseIntegerLiteral("wchar_t")
        case UInt8(ascii: "b"):
            if consumeIf("b0E") { return make(.boolExpr(false)) }
            if consumeIf("b1E") { return make(.boolExpr(true)) }
            return .none
        case UInt8(ascii: "c"): first += 1; return parseIntegerLiteral("char")
        case UInt8(ascii: "a"): first += 1; return parseIntegerLiteral("signed char")
        case UInt8(ascii: "h"): first += 1; return parseIntegerLiteral("unsigned char")
        case UInt8(ascii: "s"): first += 1; return parseIntegerLiteral("short")
        case UInt8(ascii: "t"): first += 1; return parseIntegerLiteral("unsigned short")
        case UInt8(ascii: "i"): first += 1; return parseIntegerLiteral("")
        case UInt8(ascii: "j"): first += 1; return parseIntegerLiteral("u")
        case UInt8(ascii: "l"): first += 1; return parseIntegerLiteral("l")
        case UInt8(ascii: "m"): first += 1; return parseIntegerLiteral("ul")
        case UInt8(ascii: "x"): first += 1; return parseIntegerLiteral("ll")
        case UInt8(ascii: "y"): first += 1; return parseIntegerLiteral("ull")
        case UInt8(ascii: "n"): first += 1; return parseIntegerLiteral("__int128")
        case UInt8(ascii: "o"): first += 1; return parseIntegerLiteral("unsigned __int128")
        case UInt8(ascii: "f"): first += 1; return parseFloatingLiteral(.float)
        case UInt8(ascii: "d"): first += 1; return parseFloatingLiteral(.double)
        case UInt8(ascii: "e"): first += 1; return parseFloatingLiteral(.longDouble)
        case UInt8(ascii: "_"):
            if consumeIf(UInt8(ascii: "_"), UInt8(ascii: "Z")) {
                let encoding = parseEncoding()
                if encoding != .none && consumeIf(UInt8(ascii: "E")) { return encoding }
            }
            return .none
        case UInt8(ascii: "A"):
            let type = parseType()
            guard type != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
            return make(.stringLiteral(type))
        case UInt8(ascii: "D"):
            if consumeIf(UInt8(ascii: "D"), UInt8(ascii: "n")) {
                _ = consumeIf(UInt8(ascii: "0"))
                if consumeIf(UInt8(ascii: "E")) { return makeName("nullptr") }
            }
            return .none
        case UInt8(ascii: "T"):
            return .none
        case UInt8(ascii: "U"):
            guard look(1) == UInt8(ascii: "l") else { return .none }
            let type = parseUnnamedTypeName(state: -1)
            guard type != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
            return make(.lambdaExpr(type))
        default:
            let type = parseType()
            guard type != .none else { return .none }
            let number = parseNumber(allowNegative: true)
            guard !number.isEmpty, consumeIf(UInt8(ascii: "E")) else { return .none }
            return make(.enumLiteral(type: type, integer: text(number)))
        }
    }

    /// A floating literal: `kind.mangledSize` lower-case hex digits, then `E`.
    mutating func parseFloatingLiteral(_ kind: ItaniumFloatKind) -> ItaniumNodeID {
        let size = kind.mangledSize
        guard numLeft > size else { return .none }
        for offset in 0..<size {
            let byte = input[first + offset]
            guard Self.isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f")) else { return .none }
        }
        let start = first
        first += size
        guard consumeIf(UInt8(ascii: "E")) else { return .none }
        return make(.floatLiteral(kind, inputText(from: start, to: start + size)))
    }

    /// `<braced-expression> ::= <expression> | di <field> <braced> | dx <index> <braced> | dX <begin> <end> <braced>`.
    mutating func parseBracedExpr() -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        if look() == UInt8(ascii: "d") {
            switch look(1) {
            case UInt8(ascii: "i"):
                first += 2
                let field = parseSourceName()
                guard field != .none else { return .none }
                let initializer = parseBracedExpr()
                guard initializer != .none else { return .none }
                return make(.bracedExpr(element: field, initializer: initializer, isArray: false))
            case UInt8(ascii: "x"):
                first += 2
                let index = parseExpr()
                guard index != .none else { return .none }
                let initializer = parseBracedExpr()
                guard initializer != .none else { return .none }
                return make(.bracedExpr(element: index, initializer: initializer, isArray: true))
            case UInt8(ascii: "X"):
                first += 2
                let begin = parseExpr()
                guard begin != .none else { return .none }
                let end = parseExpr()
                guard end != .none else { return .none }
                let initializer = parseBracedExpr()
                guard initializer != .none else { return .none }
                return make(.bracedRangeExpr(first: begin, last: end, initializer: initializer))
            default:
                break
            }
        }
        return parseExpr()
    }

    /// `<fold-expr> ::= fL <op> <expr> <expr> | fR <op> <expr> <expr> | fl <op> <expr> | fr <op> <expr>`.
    mutating func parseFoldExpr() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "f")) else { return .none }
        var isLeftFold = false
        var hasInitializer = false
        switch look() {
        case UInt8(ascii: "L"): isLeftFold = true; hasInitializer = true
        case UInt8(ascii: "R"): hasInitializer = true
        case UInt8(ascii: "l"): isLeftFold = true
        case UInt8(ascii: "r"): break
        default: return .none
        }
        first += 1
        guard let op = parseOperatorEncoding() else { return .none }
        let nameEndsWithStar = op.name.utf8Start[op.name.utf8CodeUnitCount - 1] == UInt8(ascii: "*")
        guard op.kind == .binary || (op.kind == .member && nameEndsWithStar) else { return .none }
        var pack = parseExpr()
        guard pack != .none else { return .none }
        var initializer = ItaniumNodeID.none
        if hasInitializer {
            initializer = parseExpr()
            guard initializer != .none else { return .none }
        }
        if isLeftFold && initializer != .none { swap(&pack, &initializer) }
        return make(.foldExpr(isLeftFold: isLeftFold, operator: .literal(op.symbol), pack: pack, initializer: initializer))
    }

    /// Reads a two-letter operator encoding when the next two bytes are one.
    mutating func parseOperatorEncoding() -> ItaniumOperator? {
        guard numLeft >= 2, let op = ItaniumOperator.find(input[first], input[first + 1]) else { return nil }
        first += 2
        return op
    }

    /// `rQ <bare-function-type> _ <requirement>+ E | rq <requirement>+ E`.
    mutating func parseRequiresExpr() -> ItaniumNodeID {
        var parameters = ItaniumNodeList.empty
        if consumeIf(UInt8(ascii: "r"), UInt8(ascii: "Q")) {
            let begin = names.count
            while !consumeIf(UInt8(ascii: "_")) {
                let type = parseType()
                guard type != .none else { return .none }
                names.append(type)
            }
            parameters = popTrailingNodeArray(begin)
        } else if !consumeIf(UInt8(ascii: "r"), UInt8(ascii: "q")) {
            return .none
        }
        let begin = names.count
        repeat {
            var constraint = ItaniumNodeID.none
            if consumeIf(UInt8(ascii: "X")) {
                let expression = parseExpr()
                guard expression != .none else { return .none }
                let isNoexcept = consumeIf(UInt8(ascii: "N"))
                var typeConstraint = ItaniumNodeID.none
                if consumeIf(UInt8(ascii: "R")) {
                    typeConstraint = parseName()
                    guard typeConstraint != .none else { return .none }
                }
                constraint = make(.exprRequirement(expression: expression, isNoexcept: isNoexcept, typeConstraint: typeConstraint))
            } else if consumeIf(UInt8(ascii: "T")) {
                let type = parseType()
                guard type != .none else { return .none }
                constraint = make(.typeRequirement(type))
            } else if consumeIf(UInt8(ascii: "Q")) {
                let nested = parseExpr()
                guard nested != .none else { return .none }
                constraint = make(.nestedRequirement(nested))
            }
            guard constraint != .none else { return .none }
            names.append(constraint)
        } while !consumeIf(UInt8(ascii: "E"))
        return make(.requiresExpr(parameters: parameters, requirements: popTrailingNodeArray(begin)))
    }

    /// A requires-clause: an expression in which template parameters print as written (`T_`).
    mutating func parseConstraintExpr() -> ItaniumNodeID {
        let saved = hasIncompleteTemplateParameterTracking
        hasIncompleteTemplateParameterTracking = true
        defer { hasIncompleteTemplateParameterTracking = saved }
        return parseExpr()
    }

    /// `<expression>` (Itanium C++ ABI §5.1.6, and LLVM's extensions).
    mutating func parseExpr() -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        let global = consumeIf(UInt8(ascii: "g"), UInt8(ascii: "s"))
        if let op = parseOperatorEncoding() {
            let symbol = op.symbol
            switch op.kind {
            case .binary:
                return parseBinaryExpr(symbol, op.precedence)
            case .prefix:
                return parsePrefixExpr(symbol, op.precedence)
            case .postfix:
                if consumeIf(UInt8(ascii: "_")) { return parsePrefixExpr(symbol, op.precedence) }
                let expression = parseExpr()
                guard expression != .none else { return .none }
                return make(.postfixExpr(child: expression, operator: .literal(symbol), precedence: op.precedence))
            case .array:
                let base = parseExpr()
                guard base != .none else { return .none }
                let index = parseExpr()
                guard index != .none else { return .none }
                return make(.arraySubscriptExpr(base, index, precedence: op.precedence))
            case .member:
                let lhs = parseExpr()
                guard lhs != .none else { return .none }
                let rhs = parseExpr()
                guard rhs != .none else { return .none }
                return make(.memberExpr(lhs: lhs, kind: .literal(symbol), rhs: rhs, precedence: op.precedence))
            case .new:
                let expressionsBegin = names.count
                while !consumeIf(UInt8(ascii: "_")) {
                    let expression = parseExpr()
                    guard expression != .none else { return .none }
                    names.append(expression)
                }
                let expressions = popTrailingNodeArray(expressionsBegin)
                let type = parseType()
                guard type != .none else { return .none }
                let haveInits = consumeIf(UInt8(ascii: "p"), UInt8(ascii: "i"))
                let initsBegin = names.count
                while !consumeIf(UInt8(ascii: "E")) {
                    guard haveInits else { return .none }
                    let initializer = parseExpr()
                    guard initializer != .none else { return .none }
                    names.append(initializer)
                }
                let inits = popTrailingNodeArray(initsBegin)
                return make(.newExpr(ItaniumNewExpr(expressions: expressions, type: type, inits: inits, isGlobal: global,
                                                    isArray: op.flag, precedence: op.precedence)))
            case .delete:
                let expression = parseExpr()
                guard expression != .none else { return .none }
                return make(.deleteExpr(expression, isGlobal: global, isArray: op.flag, precedence: op.precedence))
            case .call:
                let callee = parseExpr()
                guard callee != .none else { return .none }
                let begin = names.count
                while !consumeIf(UInt8(ascii: "E")) {
                    let argument = parseExpr()
                    guard argument != .none else { return .none }
                    names.append(argument)
                }
                return make(.callExpr(callee: callee, arguments: popTrailingNodeArray(begin), isParen: op.flag, precedence: op.precedence))
            case .cCast:
                let saved = tryToParseTemplateArgs
                tryToParseTemplateArgs = false
                let type = parseType()
                tryToParseTemplateArgs = saved
                guard type != .none else { return .none }
                let begin = names.count
                let isMany = consumeIf(UInt8(ascii: "_"))
                while !consumeIf(UInt8(ascii: "E")) {
                    let expression = parseExpr()
                    guard expression != .none else { return .none }
                    names.append(expression)
                    if !isMany { break }
                }
                let expressions = popTrailingNodeArray(begin)
                if !isMany && expressions.count != 1 { return .none }
                return make(.conversionExpr(type: type, expressions: expressions, precedence: op.precedence))
            case .conditional:
                let condition = parseExpr()
                guard condition != .none else { return .none }
                let lhs = parseExpr()
                guard lhs != .none else { return .none }
                let rhs = parseExpr()
                guard rhs != .none else { return .none }
                return make(.conditionalExpr(condition, lhs, rhs, precedence: op.precedence))
            case .namedCast:
                let type = parseType()
                guard type != .none else { return .none }
                let expression = parseExpr()
                guard expression != .none else { return .none }
                return make(.castExpr(kind: .literal(symbol), to: type, from: expression, precedence: op.precedence))
            case .ofIdOp:
                let argument = op.flag ? parseType() : parseExpr()
                guard argument != .none else { return .none }
                return make(.enclosingExpr(prefix: .literal(symbol), infix: argument, precedence: op.precedence))
            case .nameOnly:
                return .none
            }
        }

        guard numLeft >= 2 else { return .none }
        let byte = look()
        if byte == UInt8(ascii: "L") { return parseExprPrimary() }
        if byte == UInt8(ascii: "T") { return parseTemplateParam() }
        if byte == UInt8(ascii: "f") {
            if look(1) == UInt8(ascii: "p") || (look(1) == UInt8(ascii: "L") && Self.isDigit(look(2))) {
                return parseFunctionParam()
            }
            return parseFoldExpr()
        }
        if consumeIf(UInt8(ascii: "i"), UInt8(ascii: "l")) {
            let begin = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let expression = parseBracedExpr()
                guard expression != .none else { return .none }
                names.append(expression)
            }
            return make(.initListExpr(type: .none, inits: popTrailingNodeArray(begin)))
        }
        if consumeIf(UInt8(ascii: "m"), UInt8(ascii: "c")) {
            let type = parseType()
            guard type != .none else { return .none }
            let expression = parseExpr()
            guard expression != .none else { return .none }
            _ = parseNumber(allowNegative: true)
            guard consumeIf(UInt8(ascii: "E")) else { return .none }
            return make(.pointerToMemberConversionExpr(type: type, subExpr: expression, precedence: .unary))
        }
        if consumeIf(UInt8(ascii: "n"), UInt8(ascii: "x")) {
            let expression = parseExpr()
            guard expression != .none else { return .none }
            return make(.enclosingExpr(prefix: .literal("noexcept "), infix: expression, precedence: .unary))
        }
        if byte == UInt8(ascii: "r") && (look(1) == UInt8(ascii: "q") || look(1) == UInt8(ascii: "Q")) {
            return parseRequiresExpr()
        }
        if consumeIf(UInt8(ascii: "s"), UInt8(ascii: "o")) {
            let type = parseType()
            guard type != .none else { return .none }
            let expression = parseExpr()
            guard expression != .none else { return .none }
            let offset = parseNumber(allowNegative: true)
            while consumeIf(UInt8(ascii: "_")) { _ = parseNumber() }
            _ = consumeIf(UInt8(ascii: "p"))
            guard consumeIf(UInt8(ascii: "E")) else { return .none }
            return make(.subobjectExpr(type: type, subExpr: expression, offset: text(offset)))
        }
        if consumeIf(UInt8(ascii: "s"), UInt8(ascii: "p")) {
            let child = parseExpr()
            guard child != .none else { return .none }
            return make(.parameterPackExpansion(child))
        }
        if consumeIf(UInt8(ascii: "s"), UInt8(ascii: "Z")) {
            if look() == UInt8(ascii: "T") {
                let parameter = parseTemplateParam()
                guard parameter != .none else { return .none }
                return make(.sizeofParamPackExpr(parameter))
            }
            let parameter = parseFunctionParam()
            guard parameter != .none else { return .none }
            return make(.enclosingExpr(prefix: .literal("sizeof... "), infix: parameter, precedence: .primary))
        }
        if consumeIf(UInt8(ascii: "s"), UInt8(ascii: "P")) {
            let begin = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let argument = parseTemplateArg()
                guard argument != .none else { return .none }
                names.append(argument)
            }
            let pack = make(.nodeArray(popTrailingNodeArray(begin)))
            return make(.enclosingExpr(prefix: .literal("sizeof... "), infix: pack, precedence: .primary))
        }
        if consumeIf(UInt8(ascii: "t"), UInt8(ascii: "l")) {
            let type = parseType()
            guard type != .none else { return .none }
            let begin = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let expression = parseBracedExpr()
                guard expression != .none else { return .none }
                names.append(expression)
            }
            return make(.initListExpr(type: type, inits: popTrailingNodeArray(begin)))
        }
        if consumeIf(UInt8(ascii: "t"), UInt8(ascii: "r")) { return makeName("throw") }
        if consumeIf(UInt8(ascii: "t"), UInt8(ascii: "w")) {
            let expression = parseExpr()
            guard expression != .none else { return .none }
            return make(.throwExpr(expression))
        }
        if consumeIf(UInt8(ascii: "u")) {
            let name = parseSourceName()
            guard name != .none else { return .none }
            // Legacy `__uuidof` mangling: `t` and `z` where a template argument is expected.
            var isUUID = false
            var uuid = ItaniumNodeID.none
            if baseNameEquals(name, "__uuidof") {
                if consumeIf(UInt8(ascii: "t")) {
                    uuid = parseType()
                    isUUID = true
                } else if consumeIf(UInt8(ascii: "z")) {
                    uuid = parseExpr()
                    isUUID = true
                }
            }
            let begin = names.count
            if isUUID {
                guard uuid != .none else { return .none }
                names.append(uuid)
            } else {
                while !consumeIf(UInt8(ascii: "E")) {
                    let argument = parseTemplateArg()
                    guard argument != .none else { return .none }
                    names.append(argument)
                }
            }
            return make(.callExpr(callee: name, arguments: popTrailingNodeArray(begin), isParen: false, precedence: .postfix))
        }
        return parseUnresolvedName(global: global)
    }

    /// Whether `name` is a plain name spelled `text`.
    func baseNameEquals(_ name: ItaniumNodeID, _ text: StaticString) -> Bool {
        guard case .name(.input(let start, let count)) = nodes[Int(name)], Int(count) == text.utf8CodeUnitCount else {
            return false
        }
        return UnsafeBufferPointer(start: text.utf8Start, count: Int(count)).elementsEqual(input[Int(start)..<Int(start + count)])
    }
}
