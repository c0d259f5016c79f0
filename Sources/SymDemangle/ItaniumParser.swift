/// crashsym's own Itanium C++ demangler: reads a mangled name into `ItaniumNode`s and prints them
/// (`ItaniumParser+Printing.swift`) exactly as LLVM 21's `ItaniumDemangle.h` does, covering what GNU
/// libiberty 2.40 leaves mangled: C++20 constrained template parameters (`Tk`), requires-clauses
/// (`Q`), C++23 explicit object parameters (`NH`), lambdas with template parameter lists,
/// constrained placeholders (`Dk`/`DK`), module names (`W`), member-like friends (`F`).
///
/// Safe on hostile input: it works on bytes with every read bounds-checked and arithmetic that
/// wraps rather than traps (as LLVM's `size_t` does), nests at most `maximumDepth` parse levels,
/// and prints with a node-visit and output-size budget (substitutions can make a short name's tree
/// exponentially large), so that a hostile name gives `nil` in bounded time and memory.
struct ItaniumParser {
    /// The deepest parse or print recursion allowed; real names stay far below it.
    static let maximumDepth = 192
    /// The most output bytes a name may print to (`Demangler`'s promise: at most a million bytes
    /// more than the name).
    static let maximumOutput = 1_000_000
    /// The most node visits printing may take.
    static let maximumVisits = 1 << 22

    let input: UnsafeBufferPointer<UInt8>
    var first: Int
    let last: Int

    var nodes: [ItaniumNode] = []
    var caches: [ItaniumCaches] = []
    /// LLVM's `Printing` flags of reference and forward-reference nodes, by node.
    var printing: [Bool] = []
    var lists: [ItaniumNodeID] = []

    var names: [ItaniumNodeID] = []
    var substitutions: [ItaniumNodeID] = []
    /// Template parameter lists by storage index; index 0 is the outer list.
    var parameterLists: [[ItaniumNodeID]] = [[]]
    /// Lists in scope by level: an index into `parameterLists`, or -1 (a generic lambda's).
    var templateParams: [Int] = []
    var forwardTemplateRefs: [ItaniumNodeID] = []
    var tryToParseTemplateArgs = true
    var permitForwardTemplateReferences = false
    var hasIncompleteTemplateParameterTracking = false
    var parsingLambdaParamsAtLevel = Int.max
    var syntheticTemplateParameterCounts: (UInt32, UInt32, UInt32) = (0, 0, 0)
    var depth = 0
    var failed = false

    // Printing state (LLVM's OutputBuffer).
    var output: [UInt8] = []
    var currentPackIndex = UInt32.max
    var currentPackMax = UInt32.max
    var insideTemplateArgs = false
    var parenDepthInTemplateArgs: UInt32 = 0
    var visits = 0

    /// Holds what LLVM's `NameState` holds for the name of an encoding.
    struct NameState {
        var ctorDtorConversion = false
        var endsWithTemplateArgs = false
        var qualifiers: UInt8 = 0
        var referenceQualifier: UInt8 = 0
        var forwardTemplateRefsBegin: Int
        var hasExplicitObjectParameter = false
    }
    var states: [NameState] = []

    init(_ input: UnsafeBufferPointer<UInt8>) {
        self.input = input
        self.first = 0
        self.last = input.count
    }

    /// Demangles `name` (`_Z…`, `___Z…_block_invoke`, or a bare type) as LLVM 21's
    /// `itaniumDemangle(name, parameters)` does; `nil` where it returns null or where a budget
    /// runs out.
    static func demangle(_ name: UnsafeBufferPointer<UInt8>, parameters: Bool = true) -> [UInt8]? {
        demangleWithSuffix(name, parameters: parameters)?.output
    }

    /// `demangle(_:parameters:)`, with where a trailing clone suffix (`.cold`, `.llvm.1`, which
    /// LLVM prints as ` (.cold)`) starts in `name`, if the name has one.
    static func demangleWithSuffix(_ name: UnsafeBufferPointer<UInt8>, parameters: Bool = true)
        -> (output: [UInt8], cloneSuffixStart: Int?)? {
        guard !name.isEmpty else { return nil }
        var parser = ItaniumParser(name)
        // A node per byte of input at most, in practice far fewer: one allocation each.
        parser.nodes.reserveCapacity(name.count / 2 + 8)
        parser.caches.reserveCapacity(name.count / 2 + 8)
        parser.printing.reserveCapacity(name.count / 2 + 8)
        parser.lists.reserveCapacity(name.count / 2 + 8)
        let root = parser.parse(parameters: parameters)
        guard root != .none, !parser.failed else { return nil }
        parser.output.reserveCapacity(name.count * 2)
        parser.print(root)
        guard !parser.failed else { return nil }
        var suffixStart: Int?
        if case .dotSuffix(_, .input(let start, _)) = parser.nodes[Int(root)] { suffixStart = Int(start) }
        return (parser.output, suffixStart)
    }

    /// `demangle(_:parameters:)` for an array of bytes.
    static func demangle(_ name: [UInt8], parameters: Bool = true) -> [UInt8]? {
        name.withUnsafeBufferPointer { demangle($0, parameters: parameters) }
    }

    // MARK: - Input

    @inline(__always) func look(_ ahead: Int = 0) -> UInt8 {
        first + ahead < last ? input[first + ahead] : 0
    }

    @inline(__always) var numLeft: Int { last - first }

    @inline(__always) mutating func consumeIf(_ byte: UInt8) -> Bool {
        if first < last && input[first] == byte {
            first += 1
            return true
        }
        return false
    }

    @inline(__always) mutating func consumeIf(_ a: UInt8, _ b: UInt8) -> Bool {
        if first + 1 < last && input[first] == a && input[first + 1] == b {
            first += 2
            return true
        }
        return false
    }

    mutating func consumeIf(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard numLeft >= count else { return false }
        let bytes = text.utf8Start
        for offset in 0..<count where input[first + offset] != bytes[offset] { return false }
        first += count
        return true
    }

    @inline(__always) mutating func consume() -> UInt8 {
        guard first < last else { return 0 }
        first += 1
        return input[first - 1]
    }

    @inline(__always) static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// Where recursion enters a nested production: false (and the parse fails) past the depth limit.
    @inline(__always) mutating func enter() -> Bool {
        depth += 1
        if depth > Self.maximumDepth {
            failed = true
            return false
        }
        return true
    }

    // MARK: - Nodes

    mutating func make(_ node: ItaniumNode, _ cache: ItaniumCaches = .none) -> ItaniumNodeID {
        nodes.append(node)
        caches.append(cache)
        printing.append(false)
        return ItaniumNodeID(nodes.count - 1)
    }

    mutating func makeName(_ text: StaticString) -> ItaniumNodeID { make(.name(.literal(text))) }

    func inputText(from start: Int, to end: Int) -> ItaniumText {
        .input(start: Int32(start), count: Int32(end - start))
    }

    mutating func popTrailingNodeArray(_ from: Int) -> ItaniumNodeList {
        let list = ItaniumNodeList(start: Int32(lists.count), count: Int32(names.count - from))
        lists.append(contentsOf: names[from...])
        names.removeSubrange(from...)
        return list
    }

    mutating func makeList(_ ids: ItaniumNodeID...) -> ItaniumNodeList {
        let list = ItaniumNodeList(start: Int32(lists.count), count: Int32(ids.count))
        lists.append(contentsOf: ids)
        return list
    }

    func kindIs(_ id: ItaniumNodeID, _ test: (ItaniumNode) -> Bool) -> Bool { test(nodes[Int(id)]) }

    mutating func makeQualType(_ child: ItaniumNodeID, _ qualifiers: UInt8) -> ItaniumNodeID {
        make(.qualType(child: child, qualifiers: qualifiers), caches[Int(child)])
    }

    mutating func makePointer(_ pointee: ItaniumNodeID) -> ItaniumNodeID {
        make(.pointerType(pointee), ItaniumCaches(rhsComponent: caches[Int(pointee)].rhsComponent, array: .no, function: .no))
    }

    mutating func makeParameterPack(_ data: ItaniumNodeList) -> ItaniumNodeID {
        var cache = ItaniumCaches(rhsComponent: .no, array: .no, function: .no)
        for index in Int(data.start)..<Int(data.start + data.count) {
            let element = caches[Int(lists[index])]
            if element.array != .no { cache.array = .unknown }
            if element.function != .no { cache.function = .unknown }
            if element.rhsComponent != .no { cache.rhsComponent = .unknown }
        }
        return make(.parameterPack(data), cache)
    }

    static let rhsOnly = ItaniumCaches(rhsComponent: .yes, array: .no, function: .no)
    static let functionLike = ItaniumCaches(rhsComponent: .yes, array: .no, function: .yes)

    // MARK: - Top level

    /// `<mangled-name> ::= _Z <encoding> [.<suffix>] | ___Z <encoding> _block_invoke… | <type>`.
    mutating func parse(parameters: Bool) -> ItaniumNodeID {
        if consumeIf("_Z") || consumeIf("__Z") {
            var encoding = parseEncoding(parameters: parameters)
            guard encoding != .none else { return .none }
            if look() == UInt8(ascii: ".") {
                encoding = make(.dotSuffix(prefix: encoding, suffix: inputText(from: first, to: last)))
                first = last
            }
            return numLeft == 0 ? encoding : .none
        }
        if consumeIf("___Z") || consumeIf("____Z") {
            let encoding = parseEncoding(parameters: parameters)
            guard encoding != .none, consumeIf("_block_invoke") else { return .none }
            let requireNumber = consumeIf(UInt8(ascii: "_"))
            if parseNumber().isEmpty && requireNumber { return .none }
            if look() == UInt8(ascii: ".") { first = last }
            guard numLeft == 0 else { return .none }
            return make(.specialName(special: .literal("invocation function for block in "), child: encoding))
        }
        let type = parseType()
        return numLeft == 0 ? type : .none
    }

    // MARK: - Numbers

    /// `<number> ::= [n] <digits>`; the empty range when there are no digits.
    mutating func parseNumber(allowNegative: Bool = false) -> Range<Int> {
        let start = first
        if allowNegative { _ = consumeIf(UInt8(ascii: "n")) }
        guard numLeft > 0, Self.isDigit(input[first]) else { return start..<start }
        while numLeft > 0 && Self.isDigit(input[first]) { first += 1 }
        return start..<first
    }

    func text(_ range: Range<Int>) -> ItaniumText { inputText(from: range.lowerBound, to: range.upperBound) }

    /// `[0-9]+` as a wrapping `size_t`; nil when there is no digit.
    mutating func parsePositiveInteger() -> UInt64? {
        guard Self.isDigit(look()) else { return nil }
        var value: UInt64 = 0
        while Self.isDigit(look()) { value = value &* 10 &+ UInt64(consume() - 0x30) }
        return value
    }

    /// `<length> <identifier>` as a range (empty when malformed).
    mutating func parseBareSourceName() -> Range<Int> {
        guard let length = parsePositiveInteger(), UInt64(numLeft) >= length else { return first..<first }
        let start = first
        first += Int(length)
        return start..<first
    }

    /// `<CV-qualifiers> ::= [r] [V] [K]`.
    mutating func parseCVQualifiers() -> UInt8 {
        var qualifiers: UInt8 = 0
        if consumeIf(UInt8(ascii: "r")) { qualifiers |= ItaniumQualifier.restrict }
        if consumeIf(UInt8(ascii: "V")) { qualifiers |= ItaniumQualifier.volatile }
        if consumeIf(UInt8(ascii: "K")) { qualifiers |= ItaniumQualifier.const }
        return qualifiers
    }

    /// `<seq-id> ::= <0-9A-Z>+` (base 36, wrapping).
    mutating func parseSeqId() -> UInt64? {
        let byte = look()
        guard Self.isDigit(byte) || (byte >= 0x41 && byte <= 0x5A) else { return nil }
        var id: UInt64 = 0
        while true {
            let byte = look()
            if Self.isDigit(byte) {
                id = id &* 36 &+ UInt64(byte - 0x30)
            } else if byte >= 0x41 && byte <= 0x5A {
                id = id &* 36 &+ UInt64(byte - 0x41) &+ 10
            } else {
                return id
            }
            first += 1
        }
    }

    /// Skips a `<discriminator>` (`_N`, `__N_`, or trailing digits).
    mutating func skipDiscriminator() {
        guard first < last else { return }
        if input[first] == UInt8(ascii: "_") {
            var t1 = first + 1
            guard t1 < last else { return }
            if Self.isDigit(input[t1]) {
                first = t1 + 1
            } else if input[t1] == UInt8(ascii: "_") {
                t1 += 1
                while t1 < last && Self.isDigit(input[t1]) { t1 += 1 }
                if t1 < last && input[t1] == UInt8(ascii: "_") { first = t1 + 1 }
            }
        } else if Self.isDigit(input[first]) {
            var t1 = first + 1
            while t1 < last && Self.isDigit(input[t1]) { t1 += 1 }
            if t1 == last { first = last }
        }
    }

    // MARK: - Encoding

    /// `<encoding> ::= <function name> <bare-function-type> [Q <requires>] | <data name> | <special-name>`.
    mutating func parseEncoding(parameters: Bool = true) -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        // The template parameters of an encoding are unrelated to those of the enclosing context.
        // (Swapped out, not copied: no allocation for the usual empty lists.)
        var savedParams: [Int] = []
        var savedOuter: [ItaniumNodeID] = []
        swap(&savedParams, &templateParams)
        swap(&savedOuter, &parameterLists[0])
        defer {
            swap(&savedParams, &templateParams)
            swap(&savedOuter, &parameterLists[0])
        }

        if look() == UInt8(ascii: "G") || look() == UInt8(ascii: "T") { return parseSpecialName() }

        states.append(NameState(forwardTemplateRefsBegin: forwardTemplateRefs.count))
        let state = states.count - 1
        defer { states.removeLast() }
        let name = parseName(state: state)
        guard name != .none else { return .none }
        if resolveForwardTemplateRefs(state) { return .none }
        if isEndOfEncoding { return name }
        if !parameters {
            first = last
            return name
        }

        var attributes = ItaniumNodeID.none
        if consumeIf("Ua9enable_ifI") {
            let before = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let argument = parseTemplateArg()
                guard argument != .none else { return .none }
                names.append(argument)
            }
            attributes = make(.enableIfAttr(popTrailingNodeArray(before)))
        }

        var returnType = ItaniumNodeID.none
        if !states[state].ctorDtorConversion && states[state].endsWithTemplateArgs {
            returnType = parseType()
            guard returnType != .none else { return .none }
        }

        var parameterList = ItaniumNodeList.empty
        if !consumeIf(UInt8(ascii: "v")) {
            let begin = names.count
            repeat {
                var type = parseType()
                guard type != .none else { return .none }
                if states[state].hasExplicitObjectParameter && begin == names.count {
                    type = make(.explicitObjectParameter(type))
                }
                names.append(type)
            } while !isEndOfEncoding && look() != UInt8(ascii: "Q")
            parameterList = popTrailingNodeArray(begin)
        }

        var requires = ItaniumNodeID.none
        if consumeIf(UInt8(ascii: "Q")) {
            requires = parseConstraintExpr()
            guard requires != .none else { return .none }
        }
        return make(.functionEncoding(ItaniumFunctionEncoding(
            returnType: returnType, name: name, parameters: parameterList, attributes: attributes,
            requires: requires, qualifiers: states[state].qualifiers,
            referenceQualifier: states[state].referenceQualifier)), Self.functionLike)
    }

    /// The bytes that can follow an `<encoding>` (none starts a `<type>`).
    var isEndOfEncoding: Bool {
        numLeft == 0 || look() == UInt8(ascii: "E") || look() == UInt8(ascii: ".") || look() == UInt8(ascii: "_")
    }

    /// Points the forward references made since `state` began at their template arguments;
    /// true on failure.
    mutating func resolveForwardTemplateRefs(_ state: Int) -> Bool {
        let begin = states[state].forwardTemplateRefsBegin
        for position in begin..<forwardTemplateRefs.count {
            let reference = forwardTemplateRefs[position]
            guard case .forwardTemplateReference(let index, _) = nodes[Int(reference)] else { continue }
            guard let outer = templateParams.first, outer >= 0, index < UInt64(parameterLists[outer].count) else {
                return true
            }
            nodes[Int(reference)] = .forwardTemplateReference(index: index, target: parameterLists[outer][Int(index)])
        }
        forwardTemplateRefs.removeSubrange(begin...)
        return false
    }

    /// `<call-offset> ::= h <nv-offset> _ | v <v-offset> _`; true on failure.
    mutating func parseCallOffset() -> Bool {
        if consumeIf(UInt8(ascii: "h")) {
            return parseNumber(allowNegative: true).isEmpty || !consumeIf(UInt8(ascii: "_"))
        }
        if consumeIf(UInt8(ascii: "v")) {
            return parseNumber(allowNegative: true).isEmpty || !consumeIf(UInt8(ascii: "_"))
                || parseNumber(allowNegative: true).isEmpty || !consumeIf(UInt8(ascii: "_"))
        }
        return true
    }

    /// `<special-name>`: vtables, typeinfo, thunks, guard variables, temporaries, module initializers.
    mutating func parseSpecialName() -> ItaniumNodeID {
        switch look() {
        case UInt8(ascii: "T"):
            switch look(1) {
            case UInt8(ascii: "A"):
                first += 2
                let argument = parseTemplateArg()
                guard argument != .none else { return .none }
                return make(.specialName(special: .literal("template parameter object for "), child: argument))
            case UInt8(ascii: "V"): return parseSpecialType("vtable for ")
            case UInt8(ascii: "T"): return parseSpecialType("VTT for ")
            case UInt8(ascii: "I"): return parseSpecialType("typeinfo for ")
            case UInt8(ascii: "S"): return parseSpecialType("typeinfo name for ")
            case UInt8(ascii: "c"):
                first += 2
                if parseCallOffset() || parseCallOffset() { return .none }
                let encoding = parseEncoding()
                guard encoding != .none else { return .none }
                return make(.specialName(special: .literal("covariant return thunk to "), child: encoding))
            case UInt8(ascii: "C"):
                first += 2
                let firstType = parseType()
                guard firstType != .none else { return .none }
                if parseNumber(allowNegative: true).isEmpty || !consumeIf(UInt8(ascii: "_")) { return .none }
                let secondType = parseType()
                guard secondType != .none else { return .none }
                return make(.ctorVtableSpecialName(first: secondType, second: firstType))
            case UInt8(ascii: "W"): return parseSpecialObject("thread-local wrapper routine for ")
            case UInt8(ascii: "H"): return parseSpecialObject("thread-local initialization routine for ")
            default:
                first += 1
                let isVirtual = look() == UInt8(ascii: "v")
                if parseCallOffset() { return .none }
                let encoding = parseEncoding()
                guard encoding != .none else { return .none }
                return make(.specialName(special: isVirtual ? .literal("virtual thunk to ") : .literal("non-virtual thunk to "), child: encoding))
            }
        case UInt8(ascii: "G"):
            switch look(1) {
            case UInt8(ascii: "V"): return parseSpecialObject("guard variable for ")
            case UInt8(ascii: "R"):
                first += 2
                let name = parseName()
                guard name != .none else { return .none }
                let parsedSeqId = parseSeqId() != nil
                if !consumeIf(UInt8(ascii: "_")) && parsedSeqId { return .none }
                return make(.specialName(special: .literal("reference temporary for "), child: name))
            case UInt8(ascii: "I"):
                first += 2
                var module = ItaniumNodeID.none
                if parseModuleNameOpt(&module) || module == .none { return .none }
                return make(.specialName(special: .literal("initializer for module "), child: module))
            default: return .none
            }
        default: return .none
        }
    }

    mutating func parseSpecialType(_ special: StaticString) -> ItaniumNodeID {
        first += 2
        let type = parseType()
        guard type != .none else { return .none }
        return make(.specialName(special: .literal(special), child: type))
    }

    mutating func parseSpecialObject(_ special: StaticString) -> ItaniumNodeID {
        first += 2
        let name = parseName()
        guard name != .none else { return .none }
        return make(.specialName(special: .literal(special), child: name))
    }

    // MARK: - Names

    /// `<name> ::= <nested-name> | <local-name> | <unscoped-template-name> <template-args> | <unscoped-name>`.
    mutating func parseName(state: Int = -1) -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        if look() == UInt8(ascii: "N") { return parseNestedName(state: state) }
        if look() == UInt8(ascii: "Z") { return parseLocalName(state: state) }

        var isSubstitution = false
        var result = parseUnscopedName(state: state, isSubstitution: &isSubstitution)
        guard result != .none else { return .none }
        if look() == UInt8(ascii: "I") {
            if !isSubstitution { substitutions.append(result) }
            let arguments = parseTemplateArgs(tagTemplates: state >= 0)
            guard arguments != .none else { return .none }
            if state >= 0 { states[state].endsWithTemplateArgs = true }
            result = make(.nameWithTemplateArgs(name: result, arguments: arguments))
        } else if isSubstitution {
            return .none
        }
        return result
    }

    /// `<local-name> ::= Z <encoding> E <entity name> [<discriminator>] | Z <encoding> E s [<d>] | Z <encoding> Ed [<n>] _ <name>`.
    mutating func parseLocalName(state: Int) -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "Z")) else { return .none }
        let encoding = parseEncoding()
        guard encoding != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
        if consumeIf(UInt8(ascii: "s")) {
            skipDiscriminator()
            return make(.localName(encoding: encoding, entity: makeName("string literal")))
        }
        // The template parameters of the inner name are unrelated to those of the enclosing context.
        var savedParams: [Int] = []
        var savedOuter: [ItaniumNodeID] = []
        swap(&savedParams, &templateParams)
        swap(&savedOuter, &parameterLists[0])
        defer {
            swap(&savedParams, &templateParams)
            swap(&savedOuter, &parameterLists[0])
        }
        if consumeIf(UInt8(ascii: "d")) {
            _ = parseNumber(allowNegative: true)
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            let name = parseName(state: state)
            guard name != .none else { return .none }
            return make(.localName(encoding: encoding, entity: name))
        }
        let entity = parseName(state: state)
        guard entity != .none else { return .none }
        skipDiscriminator()
        return make(.localName(encoding: encoding, entity: entity))
    }

    /// `<unscoped-name> ::= <unqualified-name> | St <unqualified-name>`, or a substitution.
    mutating func parseUnscopedName(state: Int, isSubstitution: inout Bool) -> ItaniumNodeID {
        var std = ItaniumNodeID.none
        if consumeIf(UInt8(ascii: "S"), UInt8(ascii: "t")) { std = makeName("std") }
        var result = ItaniumNodeID.none
        var module = ItaniumNodeID.none
        if look() == UInt8(ascii: "S") {
            let substitution = parseSubstitution()
            guard substitution != .none else { return .none }
            if case .moduleName = nodes[Int(substitution)] {
                module = substitution
            } else if std == .none {
                result = substitution
                isSubstitution = true
            } else {
                return .none
            }
        }
        if result == .none || std != .none {
            result = parseUnqualifiedName(state: state, scope: std, module: module)
        }
        return result
    }

    /// `<unqualified-name>`, with its module, friend and ABI-tag decorations.
    mutating func parseUnqualifiedName(state: Int, scope: ItaniumNodeID, module: ItaniumNodeID) -> ItaniumNodeID {
        var module = module
        var scope = scope
        if parseModuleNameOpt(&module) { return .none }
        let isMemberLikeFriend = scope != .none && consumeIf(UInt8(ascii: "F"))
        _ = consumeIf(UInt8(ascii: "L"))

        var result: ItaniumNodeID
        let byte = look()
        if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") {
            result = parseSourceName()
        } else if byte == UInt8(ascii: "U") {
            result = parseUnnamedTypeName(state: state)
        } else if consumeIf(UInt8(ascii: "D"), UInt8(ascii: "C")) {
            let begin = names.count
            repeat {
                let binding = parseSourceName()
                guard binding != .none else { return .none }
                names.append(binding)
            } while !consumeIf(UInt8(ascii: "E"))
            result = make(.structuredBindingName(popTrailingNodeArray(begin)))
        } else if byte == UInt8(ascii: "C") || byte == UInt8(ascii: "D") {
            if scope == .none || module != .none { return .none }
            result = parseCtorDtorName(scope: &scope, state: state)
        } else {
            result = parseOperatorName(state: state)
        }

        if result != .none && module != .none { result = make(.moduleEntity(module: module, name: result)) }
        if result != .none { result = parseAbiTags(result) }
        if result != .none && isMemberLikeFriend {
            result = make(.memberLikeFriendName(qualifier: scope, name: result))
        } else if result != .none && scope != .none {
            result = make(.nestedName(qualifier: scope, name: result))
        }
        return result
    }

    /// `<module-name> ::= W [P] <source-name> …`; true on failure.
    mutating func parseModuleNameOpt(_ module: inout ItaniumNodeID) -> Bool {
        while consumeIf(UInt8(ascii: "W")) {
            let isPartition = consumeIf(UInt8(ascii: "P"))
            let sub = parseSourceName()
            guard sub != .none else { return true }
            module = make(.moduleName(parent: module, name: sub, isPartition: isPartition))
            substitutions.append(module)
        }
        return false
    }

    /// `<unnamed-type-name> ::= Ut [<n>] _ | Ul <lambda-sig> E [<n>] _ | Ub [<n>] _`.
    mutating func parseUnnamedTypeName(state: Int) -> ItaniumNodeID {
        if state >= 0 { templateParams.removeAll(keepingCapacity: true) }
        if consumeIf(UInt8(ascii: "U"), UInt8(ascii: "t")) {
            let count = parseNumber()
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            return make(.unnamedTypeName(text(count)))
        }
        if consumeIf(UInt8(ascii: "U"), UInt8(ascii: "l")) {
            let savedLevel = parsingLambdaParamsAtLevel
            parsingLambdaParamsAtLevel = templateParams.count
            defer { parsingLambdaParamsAtLevel = savedLevel }
            let oldCount = templateParams.count
            parameterLists.append([])
            let lambdaList = parameterLists.count - 1
            templateParams.append(lambdaList)
            defer { if templateParams.count > oldCount { templateParams.removeSubrange(oldCount...) } }

            let begin = names.count
            while isTemplateParamDecl {
                let declaration = parseTemplateParamDecl(list: lambdaList)
                guard declaration != .none else { return .none }
                names.append(declaration)
            }
            let templateParameters = popTrailingNodeArray(begin)
            if templateParameters.count == 0 { templateParams.removeLast() }

            var requires1 = ItaniumNodeID.none
            if consumeIf(UInt8(ascii: "Q")) {
                requires1 = parseConstraintExpr()
                guard requires1 != .none else { return .none }
            }
            if !consumeIf(UInt8(ascii: "v")) {
                repeat {
                    let parameter = parseType()
                    guard parameter != .none else { return .none }
                    names.append(parameter)
                } while look() != UInt8(ascii: "E") && look() != UInt8(ascii: "Q")
            }
            let parameterList = popTrailingNodeArray(begin)
            var requires2 = ItaniumNodeID.none
            if consumeIf(UInt8(ascii: "Q")) {
                requires2 = parseConstraintExpr()
                guard requires2 != .none else { return .none }
            }
            guard consumeIf(UInt8(ascii: "E")) else { return .none }
            let count = parseNumber()
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            return make(.closureTypeName(ItaniumClosure(
                templateParameters: templateParameters, requires1: requires1, parameters: parameterList,
                requires2: requires2, count: text(count))))
        }
        if consumeIf(UInt8(ascii: "U"), UInt8(ascii: "b")) {
            _ = parseNumber()
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
            return makeName("'block-literal'")
        }
        return .none
    }

    /// `<source-name> ::= <positive length number> <identifier>`.
    mutating func parseSourceName() -> ItaniumNodeID {
        guard let length = parsePositiveInteger(), length != 0, UInt64(numLeft) >= length else { return .none }
        let start = first
        first += Int(length)
        if input[start] == UInt8(ascii: "_") && first - start >= 10
            && input[start..<(start + 10)].elementsEqual("_GLOBAL__N".utf8) {
            return makeName("(anonymous namespace)")
        }
        return make(.name(inputText(from: start, to: first)))
    }

    /// `<operator-name>`, `li <source-name>`, `v <digit> <source-name>`.
    mutating func parseOperatorName(state: Int) -> ItaniumNodeID {
        if let op = parseOperatorEncoding() {
            if op.kind == .cCast {
                let savedTemplate = tryToParseTemplateArgs
                let savedPermit = permitForwardTemplateReferences
                tryToParseTemplateArgs = false
                permitForwardTemplateReferences = permitForwardTemplateReferences || state >= 0
                defer {
                    tryToParseTemplateArgs = savedTemplate
                    permitForwardTemplateReferences = savedPermit
                }
                let type = parseType()
                guard type != .none else { return .none }
                if state >= 0 { states[state].ctorDtorConversion = true }
                return make(.conversionOperatorType(type))
            }
            if op.kind.rawValue >= ItaniumOperator.Kind.namedCast.rawValue { return .none }
            if op.kind == .member && !op.flag { return .none }
            return make(.name(.literal(op.name)))
        }
        if consumeIf(UInt8(ascii: "l"), UInt8(ascii: "i")) {
            let name = parseSourceName()
            guard name != .none else { return .none }
            return make(.literalOperator(name))
        }
        if consumeIf(UInt8(ascii: "v")) {
            if Self.isDigit(look()) {
                first += 1
                let name = parseSourceName()
                guard name != .none else { return .none }
                return make(.conversionOperatorType(name))
            }
            return .none
        }
        return .none
    }

    /// `<ctor-dtor-name> ::= C[I]1-5 | D0-2,4,5`; expands a special substitution scope first.
    mutating func parseCtorDtorName(scope: inout ItaniumNodeID, state: Int) -> ItaniumNodeID {
        if case .specialSubstitution(let kind) = nodes[Int(scope)] {
            scope = make(.expandedSpecialSubstitution(kind))
        }
        if consumeIf(UInt8(ascii: "C")) {
            let isInherited = consumeIf(UInt8(ascii: "I"))
            let variant = look()
            guard variant >= UInt8(ascii: "1") && variant <= UInt8(ascii: "5") else { return .none }
            first += 1
            if state >= 0 { states[state].ctorDtorConversion = true }
            if isInherited && parseName(state: state) == .none { return .none }
            return make(.ctorDtorName(base: scope, isDestructor: false))
        }
        let variant = look(1)
        if look() == UInt8(ascii: "D") && (variant == UInt8(ascii: "0") || variant == UInt8(ascii: "1")
            || variant == UInt8(ascii: "2") || variant == UInt8(ascii: "4") || variant == UInt8(ascii: "5")) {
            first += 2
            if state >= 0 { states[state].ctorDtorConversion = true }
            return make(.ctorDtorName(base: scope, isDestructor: true))
        }
        return .none
    }

    /// `<nested-name> ::= N [H | <CV-qualifiers> [<ref-qualifier>]] <prefix> <unqualified-name> E`.
    mutating func parseNestedName(state: Int) -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "N")) else { return .none }
        if !consumeIf(UInt8(ascii: "H")) {
            let qualifiers = parseCVQualifiers()
            if state >= 0 { states[state].qualifiers = qualifiers }
            if consumeIf(UInt8(ascii: "O")) {
                if state >= 0 { states[state].referenceQualifier = 2 }
            } else if consumeIf(UInt8(ascii: "R")) {
                if state >= 0 { states[state].referenceQualifier = 1 }
            } else if state >= 0 {
                states[state].referenceQualifier = 0
            }
        } else if state >= 0 {
            states[state].hasExplicitObjectParameter = true
        }

        var soFar = ItaniumNodeID.none
        while !consumeIf(UInt8(ascii: "E")) {
            if state >= 0 { states[state].endsWithTemplateArgs = false }
            let byte = look()
            if byte == UInt8(ascii: "T") {
                if soFar != .none { return .none }
                soFar = parseTemplateParam()
            } else if byte == UInt8(ascii: "I") {
                if soFar == .none { return .none }
                let arguments = parseTemplateArgs(tagTemplates: state >= 0)
                guard arguments != .none else { return .none }
                if case .nameWithTemplateArgs = nodes[Int(soFar)] { return .none }
                if state >= 0 { states[state].endsWithTemplateArgs = true }
                soFar = make(.nameWithTemplateArgs(name: soFar, arguments: arguments))
            } else if byte == UInt8(ascii: "D") && (look(1) == UInt8(ascii: "t") || look(1) == UInt8(ascii: "T")) {
                if soFar != .none { return .none }
                soFar = parseDecltype()
            } else {
                var module = ItaniumNodeID.none
                if byte == UInt8(ascii: "S") {
                    var substitution: ItaniumNodeID
                    if look(1) == UInt8(ascii: "t") {
                        first += 2
                        substitution = makeName("std")
                    } else {
                        substitution = parseSubstitution()
                    }
                    guard substitution != .none else { return .none }
                    if case .moduleName = nodes[Int(substitution)] {
                        module = substitution
                    } else if soFar != .none {
                        return .none
                    } else {
                        soFar = substitution
                        continue
                    }
                }
                soFar = parseUnqualifiedName(state: state, scope: soFar, module: module)
            }
            guard soFar != .none else { return .none }
            substitutions.append(soFar)
            _ = consumeIf(UInt8(ascii: "M"))
        }
        guard soFar != .none, !substitutions.isEmpty else { return .none }
        substitutions.removeLast()
        return soFar
    }

    /// `<simple-id> ::= <source-name> [<template-args>]`.
    mutating func parseSimpleId() -> ItaniumNodeID {
        let name = parseSourceName()
        guard name != .none else { return .none }
        if look() == UInt8(ascii: "I") {
            let arguments = parseTemplateArgs()
            guard arguments != .none else { return .none }
            return make(.nameWithTemplateArgs(name: name, arguments: arguments))
        }
        return name
    }

    /// `<destructor-name> ::= <unresolved-type> | <simple-id>`.
    mutating func parseDestructorName() -> ItaniumNodeID {
        let result = Self.isDigit(look()) ? parseSimpleId() : parseUnresolvedType()
        guard result != .none else { return .none }
        return make(.dtorName(result))
    }

    /// `<unresolved-type> ::= <template-param> | <decltype> | <substitution>`.
    mutating func parseUnresolvedType() -> ItaniumNodeID {
        if look() == UInt8(ascii: "T") {
            let parameter = parseTemplateParam()
            guard parameter != .none else { return .none }
            substitutions.append(parameter)
            return parameter
        }
        if look() == UInt8(ascii: "D") {
            let decltype = parseDecltype()
            guard decltype != .none else { return .none }
            substitutions.append(decltype)
            return decltype
        }
        return parseSubstitution()
    }

    /// `<base-unresolved-name> ::= <simple-id> | [on] <operator-name> [<template-args>] | dn <destructor-name>`.
    mutating func parseBaseUnresolvedName() -> ItaniumNodeID {
        if Self.isDigit(look()) { return parseSimpleId() }
        if consumeIf(UInt8(ascii: "d"), UInt8(ascii: "n")) { return parseDestructorName() }
        _ = consumeIf(UInt8(ascii: "o"), UInt8(ascii: "n"))
        let op = parseOperatorName(state: -1)
        guard op != .none else { return .none }
        if look() == UInt8(ascii: "I") {
            let arguments = parseTemplateArgs()
            guard arguments != .none else { return .none }
            return make(.nameWithTemplateArgs(name: op, arguments: arguments))
        }
        return op
    }

    /// `<unresolved-name>` (`[gs]` already read by the caller).
    mutating func parseUnresolvedName(global: Bool) -> ItaniumNodeID {
        var soFar = ItaniumNodeID.none
        if consumeIf("srN") {
            soFar = parseUnresolvedType()
            guard soFar != .none else { return .none }
            if look() == UInt8(ascii: "I") {
                let arguments = parseTemplateArgs()
                guard arguments != .none else { return .none }
                soFar = make(.nameWithTemplateArgs(name: soFar, arguments: arguments))
            }
            while !consumeIf(UInt8(ascii: "E")) {
                let qualifier = parseSimpleId()
                guard qualifier != .none else { return .none }
                soFar = make(.qualifiedName(qualifier: soFar, name: qualifier))
            }
            let base = parseBaseUnresolvedName()
            guard base != .none else { return .none }
            return make(.qualifiedName(qualifier: soFar, name: base))
        }
        if !consumeIf(UInt8(ascii: "s"), UInt8(ascii: "r")) {
            soFar = parseBaseUnresolvedName()
            guard soFar != .none else { return .none }
            if global { soFar = make(.globalQualifiedName(soFar)) }
            return soFar
        }
        if Self.isDigit(look()) {
            repeat {
                let qualifier = parseSimpleId()
                guard qualifier != .none else { return .none }
                if soFar != .none {
                    soFar = make(.qualifiedName(qualifier: soFar, name: qualifier))
                } else if global {
                    soFar = make(.globalQualifiedName(qualifier))
                } else {
                    soFar = qualifier
                }
            } while !consumeIf(UInt8(ascii: "E"))
        } else {
            soFar = parseUnresolvedType()
            guard soFar != .none else { return .none }
            if look() == UInt8(ascii: "I") {
                let arguments = parseTemplateArgs()
                guard arguments != .none else { return .none }
                soFar = make(.nameWithTemplateArgs(name: soFar, arguments: arguments))
            }
        }
        let base = parseBaseUnresolvedName()
        guard base != .none else { return .none }
        return make(.qualifiedName(qualifier: soFar, name: base))
    }

    /// `<abi-tags> ::= B <source-name> …`.
    mutating func parseAbiTags(_ node: ItaniumNodeID) -> ItaniumNodeID {
        var node = node
        while consumeIf(UInt8(ascii: "B")) {
            let tag = parseBareSourceName()
            if tag.isEmpty { return .none }
            node = make(.abiTagAttr(base: node, tag: text(tag)), caches[Int(node)])
        }
        return node
    }

    // MARK: - Substitutions and template parameters

    /// `<substitution> ::= S_ | S <seq-id> _ | Sa | Sb | Ss | Si | So | Sd`.
    mutating func parseSubstitution() -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "S")) else { return .none }
        let byte = look()
        if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") {
            let kind: ItaniumSpecialSubstitution
            switch byte {
            case UInt8(ascii: "a"): kind = .allocator
            case UInt8(ascii: "b"): kind = .basicString
            case UInt8(ascii: "d"): kind = .iostream
            case UInt8(ascii: "i"): kind = .istream
            case UInt8(ascii: "o"): kind = .ostream
            case UInt8(ascii: "s"): kind = .string
            default: return .none
            }
            first += 1
            let special = make(.specialSubstitution(kind))
            let withTags = parseAbiTags(special)
            if withTags != special {
                guard withTags != .none else { return .none }
                substitutions.append(withTags)
                return withTags
            }
            return special
        }
        if consumeIf(UInt8(ascii: "_")) {
            return substitutions.first ?? .none
        }
        guard var index = parseSeqId() else { return .none }
        index = index &+ 1
        guard consumeIf(UInt8(ascii: "_")), index < UInt64(substitutions.count) else { return .none }
        return substitutions[Int(index)]
    }

    /// `<template-param> ::= T_ | T <n> _ | TL <level> __ | TL <level> _ <n> _`.
    mutating func parseTemplateParam() -> ItaniumNodeID {
        let begin = first
        guard consumeIf(UInt8(ascii: "T")) else { return .none }
        var level: UInt64 = 0
        if consumeIf(UInt8(ascii: "L")) {
            guard let parsed = parsePositiveInteger() else { return .none }
            level = parsed &+ 1
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
        }
        var index: UInt64 = 0
        if !consumeIf(UInt8(ascii: "_")) {
            guard let parsed = parsePositiveInteger() else { return .none }
            index = parsed &+ 1
            guard consumeIf(UInt8(ascii: "_")) else { return .none }
        }
        if hasIncompleteTemplateParameterTracking {
            return make(.name(inputText(from: begin, to: first - 1)))
        }
        if permitForwardTemplateReferences && level == 0 {
            let reference = make(.forwardTemplateReference(index: index, target: .none),
                                 ItaniumCaches(rhsComponent: .unknown, array: .unknown, function: .unknown))
            forwardTemplateRefs.append(reference)
            return reference
        }
        if level >= UInt64(templateParams.count) || templateParams[Int(level)] < 0
            || index >= UInt64(parameterLists[templateParams[Int(level)]].count) {
            // Itanium ABI 5.1.8: in a generic lambda, `auto` parameters are mangled as its
            // invented template type parameters.
            if parsingLambdaParamsAtLevel != Int.max && UInt64(parsingLambdaParamsAtLevel) == level
                && level <= UInt64(templateParams.count) {
                if level == UInt64(templateParams.count) { templateParams.append(-1) }
                return makeName("auto")
            }
            return .none
        }
        return parameterLists[templateParams[Int(level)]][Int(index)]
    }

    var isTemplateParamDecl: Bool {
        guard look() == UInt8(ascii: "T") else { return false }
        switch look(1) {
        case UInt8(ascii: "y"), UInt8(ascii: "p"), UInt8(ascii: "t"), UInt8(ascii: "n"), UInt8(ascii: "k"): return true
        default: return false
        }
    }

    /// `<template-param-decl> ::= Ty | Tk <concept> [<args>] | Tn <type> | Tt <decl>* E | Tp <decl>`;
    /// invented names go into parameter list `list` (-1: none).
    mutating func parseTemplateParamDecl(list: Int) -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        func invent(_ parser: inout ItaniumParser, _ kind: UInt8) -> ItaniumNodeID {
            let index: UInt32
            switch kind {
            case 0: index = parser.syntheticTemplateParameterCounts.0; parser.syntheticTemplateParameterCounts.0 &+= 1
            case 1: index = parser.syntheticTemplateParameterCounts.1; parser.syntheticTemplateParameterCounts.1 &+= 1
            default: index = parser.syntheticTemplateParameterCounts.2; parser.syntheticTemplateParameterCounts.2 &+= 1
            }
            let name = parser.make(.syntheticTemplateParamName(kind: kind, index: index))
            if list >= 0 { parser.parameterLists[list].append(name) }
            return name
        }
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "y")) {
            return make(.typeTemplateParamDecl(invent(&self, 0)), Self.rhsOnly)
        }
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "k")) {
            let saved = hasIncompleteTemplateParameterTracking
            hasIncompleteTemplateParameterTracking = true
            let constraint = parseName()
            hasIncompleteTemplateParameterTracking = saved
            guard constraint != .none else { return .none }
            let name = invent(&self, 0)
            return make(.constrainedTypeTemplateParamDecl(constraint: constraint, name: name), Self.rhsOnly)
        }
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "n")) {
            let name = invent(&self, 1)
            let type = parseType()
            guard type != .none else { return .none }
            return make(.nonTypeTemplateParamDecl(name: name, type: type), Self.rhsOnly)
        }
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "t")) {
            let name = invent(&self, 2)
            let begin = names.count
            let oldCount = templateParams.count
            parameterLists.append([])
            let inner = parameterLists.count - 1
            templateParams.append(inner)
            defer { if templateParams.count > oldCount { templateParams.removeSubrange(oldCount...) } }
            var requires = ItaniumNodeID.none
            while !consumeIf(UInt8(ascii: "E")) {
                let parameter = parseTemplateParamDecl(list: inner)
                guard parameter != .none else { return .none }
                names.append(parameter)
                if consumeIf(UInt8(ascii: "Q")) {
                    requires = parseConstraintExpr()
                    guard requires != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
                    break
                }
            }
            let parameters = popTrailingNodeArray(begin)
            return make(.templateTemplateParamDecl(name: name, parameters: parameters, requires: requires), Self.rhsOnly)
        }
        if consumeIf(UInt8(ascii: "T"), UInt8(ascii: "p")) {
            let parameter = parseTemplateParamDecl(list: list)
            guard parameter != .none else { return .none }
            return make(.templateParamPackDecl(parameter), Self.rhsOnly)
        }
        return .none
    }

    /// `<template-arg> ::= <type> | X <expression> E | <expr-primary> | J <template-arg>* E | LZ <encoding> E | <template-param-decl> <template-arg>`.
    mutating func parseTemplateArg() -> ItaniumNodeID {
        guard enter() else { return .none }
        defer { depth -= 1 }
        switch look() {
        case UInt8(ascii: "X"):
            first += 1
            let argument = parseExpr()
            guard argument != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
            return argument
        case UInt8(ascii: "J"):
            first += 1
            let begin = names.count
            while !consumeIf(UInt8(ascii: "E")) {
                let argument = parseTemplateArg()
                guard argument != .none else { return .none }
                names.append(argument)
            }
            return make(.templateArgumentPack(popTrailingNodeArray(begin)))
        case UInt8(ascii: "L"):
            if look(1) == UInt8(ascii: "Z") {
                first += 2
                let argument = parseEncoding()
                guard argument != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
                return argument
            }
            return parseExprPrimary()
        case UInt8(ascii: "T"):
            if !isTemplateParamDecl { return parseType() }
            let parameter = parseTemplateParamDecl(list: -1)
            guard parameter != .none else { return .none }
            let argument = parseTemplateArg()
            guard argument != .none else { return .none }
            return make(.templateParamQualifiedArg(parameter: parameter, argument: argument))
        default:
            return parseType()
        }
    }

    /// `<template-args> ::= I <template-arg>* [Q <requires-clause>] E`; with `tagTemplates`,
    /// the arguments become the outer template parameters.
    mutating func parseTemplateArgs(tagTemplates: Bool = false) -> ItaniumNodeID {
        guard consumeIf(UInt8(ascii: "I")) else { return .none }
        if tagTemplates {
            templateParams.removeAll(keepingCapacity: true)
            templateParams.append(0)
            parameterLists[0].removeAll(keepingCapacity: true)
        }
        let begin = names.count
        var requires = ItaniumNodeID.none
        while !consumeIf(UInt8(ascii: "E")) {
            let argument = parseTemplateArg()
            guard argument != .none else { return .none }
            names.append(argument)
            if tagTemplates {
                var entry = argument
                if case .templateParamQualifiedArg(_, let inner) = nodes[Int(argument)] { entry = inner }
                if case .templateArgumentPack(let elements) = nodes[Int(argument)] {
                    entry = makeParameterPack(elements)
                }
                parameterLists[0].append(entry)
            }
            if consumeIf(UInt8(ascii: "Q")) {
                requires = parseConstraintExpr()
                guard requires != .none, consumeIf(UInt8(ascii: "E")) else { return .none }
                break
            }
        }
        return make(.templateArgs(arguments: popTrailingNodeArray(begin), requires: requires))
    }
}
