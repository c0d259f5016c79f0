/// Rust's v0 mangling (RFC 2603, "Rust Symbol Mangling (v0)" in the rustc book), decoded and
/// printed the way `rustc-demangle` prints with `{:#}`: no crate disambiguators, no type suffixes
/// on integer constants, closures as `{closure#N}`.
///
/// The grammar is recursive and has back-references, so hostile input is bounded three ways:
/// nesting depth (`maximumDepth`, back-references count as a level, which also ends reference
/// cycles), output size (`maximumOutput`) and total work (`maximumSteps`). Any violation, like any
/// syntax error, makes the whole result `nil`.
struct RustV0Demangler {
    /// Why decoding stopped.
    enum Failure: Error {
        /// The input does not follow the grammar.
        case invalid
        /// Nesting (including back-references) went past `maximumDepth`.
        case tooDeep
        /// Output or work went past its limit.
        case tooLong
    }

    /// Deepest nesting accepted; the same as `rustc-demangle`'s `MAX_DEPTH`.
    static let maximumDepth = 500
    /// Longest output accepted, in bytes; the same as `rustc-demangle`'s `MAX_SIZE`.
    static let maximumOutput = 1_000_000
    /// Most grammar productions visited, so that back-references into parts that print little
    /// cannot make the work grow much faster than the output.
    static let maximumSteps = 4_000_000

    /// The symbol after its `_R` prefix.
    let symbol: [UInt8]
    /// Index of the next unread byte of `symbol`.
    var position = 0
    /// Current nesting depth.
    var depth = 0
    /// Productions visited so far.
    var steps = 0
    /// False while a part that is parsed but not shown (an impl's own path, the instantiating
    /// crate) is being skipped; back-references are then checked but not followed.
    var printing = true
    /// Lifetimes bound by enclosing `for<…>` binders, for naming `'a`, `'b`, ….
    var boundLifetimes = 0
    /// The demangled text so far, UTF-8.
    var output: [UInt8] = []

    /// The number of prefix bytes before the path if `bytes` starts like a v0 symbol: `_R`, or
    /// `__R` as Mach-O spells it, followed by the uppercase tag of a path.
    static func prefixLength(of bytes: some Collection<UInt8>) -> Int? {
        for length in [2, 3] where bytes.count > length {
            let prefix = bytes.prefix(length)
            guard prefix.elementsEqual(length == 2 ? Array("_R".utf8) : Array("__R".utf8)) else { continue }
            let tag = bytes.dropFirst(length).first!
            return isUppercase(tag) ? length : nil
        }
        return nil
    }

    /// Demangles a v0 symbol; `nil` when it is not one, is malformed, or exceeds a limit.
    static func demangle(_ bytes: [UInt8]) -> String? {
        let symbol = RustSymbolSuffix.droppingLLVMSuffix(bytes)
        guard let prefix = prefixLength(of: symbol) else { return nil }
        let inner = Array(symbol.dropFirst(prefix))
        // rustc emits ASCII only (identifiers beyond it are Punycode).
        guard inner.allSatisfy({ $0 < 0x80 }) else { return nil }
        var decoder = RustV0Demangler(symbol: inner)
        do {
            return try decoder.decode()
        } catch {
            return nil
        }
    }

    /// Reads `<symbol-name> = <path> [<instantiating-crate>] [<suffix>]` and prints the path.
    private mutating func decode() throws(Failure) -> String {
        try printPath(inValue: true)
        // The crate that instantiated a generic is not shown, but it must parse.
        if let tag = peek(), Self.isUppercase(tag) {
            printing = false
            try printPath(inValue: false)
            printing = true
        }
        let suffix = symbol[position...]
        guard RustSymbolSuffix.isAcceptable(suffix) else { throw .invalid }
        output.append(contentsOf: suffix)
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Paths

    /// `<path>`; `inValue` means the path is used as a value, where generic arguments need `::<`.
    mutating func printPath(inValue: Bool) throws(Failure) {
        try enter()
        let tag = try next()
        switch tag {
        case UInt8(ascii: "C"):  // crate root
            _ = try disambiguator()
            let name = try identifier()
            try emit(name)
        case UInt8(ascii: "N"):  // nested path in a namespace
            let namespace = try next()
            guard Self.isUppercase(namespace) || Self.isLowercase(namespace) else { throw .invalid }
            try printPath(inValue: inValue)
            let index = try disambiguator()
            let name = try identifier()
            if Self.isUppercase(namespace) {
                // Special namespaces are compiler-made items: closures, shims.
                try emit("::{")
                switch namespace {
                case UInt8(ascii: "C"): try emit("closure")
                case UInt8(ascii: "S"): try emit("shim")
                default: try emit(bytes: CollectionOfOne(namespace))
                }
                if !name.isEmpty {
                    try emit(":")
                    try emit(name)
                }
                try emit("#")
                try emit(decimal: index)
                try emit("}")
            } else if !name.isEmpty {
                try emit("::")
                try emit(name)
            }
        case UInt8(ascii: "M"), UInt8(ascii: "X"), UInt8(ascii: "Y"):
            // Inherent impl `<T>`, trait impl `<T as Trait>`, trait definition `<T as Trait>`.
            if tag != UInt8(ascii: "Y") {
                // The impl's own path only disambiguates; it is not shown.
                _ = try disambiguator()
                try skipping { (decoder: inout RustV0Demangler) throws(Failure) in
                    try decoder.printPath(inValue: false)
                }
            }
            try emit("<")
            try printType()
            if tag != UInt8(ascii: "M") {
                try emit(" as ")
                try printPath(inValue: false)
            }
            try emit(">")
        case UInt8(ascii: "I"):  // generic arguments
            try printPath(inValue: inValue)
            if inValue { try emit("::") }
            try emit("<")
            try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printGenericArgument()
            }
            try emit(">")
        case UInt8(ascii: "B"):
            if let resume = try followBackReference() {
                try printPath(inValue: inValue)
                returnFromBackReference(to: resume)
            }
        default:
            throw .invalid
        }
        leave()
    }

    /// `<generic-arg> = <lifetime> | <type> | "K" <const>`.
    mutating func printGenericArgument() throws(Failure) {
        if eat(UInt8(ascii: "L")) {
            try printLifetime(index: try base62Number())
        } else if eat(UInt8(ascii: "K")) {
            try printConstant(inValue: false)
        } else {
            try printType()
        }
    }

    // MARK: Types

    /// `<type>`.
    mutating func printType() throws(Failure) {
        let tag = try next()
        if let name = Self.basicTypeName(tag) {
            try emit(name)
            return
        }
        try enter()
        switch tag {
        case UInt8(ascii: "R"), UInt8(ascii: "Q"):  // &T, &mut T
            try emit("&")
            if eat(UInt8(ascii: "L")) {
                let lifetime = try base62Number()
                if lifetime != 0 {
                    try printLifetime(index: lifetime)
                    try emit(" ")
                }
            }
            if tag == UInt8(ascii: "Q") { try emit("mut ") }
            try printType()
        case UInt8(ascii: "P"), UInt8(ascii: "O"):  // *const T, *mut T
            try emit(tag == UInt8(ascii: "P") ? "*const " : "*mut ")
            try printType()
        case UInt8(ascii: "A"), UInt8(ascii: "S"):  // [T; N], [T]
            try emit("[")
            try printType()
            if tag == UInt8(ascii: "A") {
                try emit("; ")
                try printConstant(inValue: true)
            }
            try emit("]")
        case UInt8(ascii: "T"):  // tuple; a 1-tuple keeps its comma
            try emit("(")
            let count = try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printType()
            }
            if count == 1 { try emit(",") }
            try emit(")")
        case UInt8(ascii: "F"):
            try inBinder { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printFunctionSignature()
            }
        case UInt8(ascii: "D"):  // dyn Trait + … + 'lifetime
            try emit("dyn ")
            try inBinder { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printList(separator: " + ") { (decoder: inout RustV0Demangler) throws(Failure) in
                    try decoder.printDynTrait()
                }
            }
            guard eat(UInt8(ascii: "L")) else { throw .invalid }
            let lifetime = try base62Number()
            if lifetime != 0 {
                try emit(" + ")
                try printLifetime(index: lifetime)
            }
        case UInt8(ascii: "W"):  // pattern type: `T is <pattern>`
            try printType()
            try emit(" is ")
            try printPattern()
        case UInt8(ascii: "B"):
            if let resume = try followBackReference() {
                try printType()
                returnFromBackReference(to: resume)
            }
        default:
            // Any other type is a named one: re-read the tag as a path.
            position -= 1
            try printPath(inValue: false)
        }
        leave()
    }

    /// `<fn-sig> = [<binder>] ["U"] ["K" <abi>] {<type>} "E" <type>`, after the binder.
    private mutating func printFunctionSignature() throws(Failure) {
        let isUnsafe = eat(UInt8(ascii: "U"))
        var abi: [UInt8]?
        if eat(UInt8(ascii: "K")) {
            if eat(UInt8(ascii: "C")) {
                abi = Array("C".utf8)
            } else {
                let name = try identifier()
                guard name.punycode.isEmpty, !name.ascii.isEmpty else { throw .invalid }
                // The mangling replaced `-` in ABI names (`C-unwind`) with `_`.
                abi = name.ascii.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 }
            }
        }
        if isUnsafe { try emit("unsafe ") }
        if let abi {
            try emit("extern \"")
            try emit(bytes: abi)
            try emit("\" ")
        }
        try emit("fn(")
        try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
            try decoder.printType()
        }
        try emit(")")
        // A unit return type is not written.
        if !eat(UInt8(ascii: "u")) {
            try emit(" -> ")
            try printType()
        }
    }

    /// One `<dyn-trait> = <path> {"p" <undisambiguated-identifier> <generic-arg>}`; associated
    /// type and const bindings (`Trait<Item = u8>`, `Trait<N = 0>`: the value is a type, or `K`
    /// and a constant) go inside the trait's `<…>`, which is therefore left open by the path.
    private mutating func printDynTrait() throws(Failure) {
        var isOpen = try printPathLeavingGenericsOpen()
        while eat(UInt8(ascii: "p")) {
            try emit(isOpen ? ", " : "<")
            isOpen = true
            let name = try identifier()
            try emit(name)
            try emit(" = ")
            try printGenericArgument()
        }
        if isOpen { try emit(">") }
    }

    /// A path whose generic arguments, if any, are printed without the closing `>`; returns
    /// whether it left one open.
    private mutating func printPathLeavingGenericsOpen() throws(Failure) -> Bool {
        if eat(UInt8(ascii: "B")) {
            guard let resume = try followBackReference() else { return false }
            let isOpen = try printPathLeavingGenericsOpen()
            returnFromBackReference(to: resume)
            return isOpen
        }
        if eat(UInt8(ascii: "I")) {
            try printPath(inValue: false)
            try emit("<")
            try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printGenericArgument()
            }
            return true
        }
        try printPath(inValue: false)
        return false
    }

    /// A pattern of a pattern type: `R` range, `O` alternatives, `N` non-null.
    private mutating func printPattern() throws(Failure) {
        switch try next() {
        case UInt8(ascii: "R"):
            try printConstant(inValue: false)
            try emit("..=")
            try printConstant(inValue: false)
        case UInt8(ascii: "O"):
            try enter()
            try printPattern()
            while !eat(UInt8(ascii: "E")) {
                try emit(" | ")
                try printPattern()
            }
            leave()
        case UInt8(ascii: "N"):
            try emit("!null")
        default:
            throw .invalid
        }
    }

    /// Runs `body` inside `<binder> = "G" <base-62-number>`, printing `for<'a, …> ` first.
    private mutating func inBinder(
        _ body: (inout RustV0Demangler) throws(Failure) -> Void
    ) throws(Failure) {
        let count = try optionalBase62Number(tag: UInt8(ascii: "G"))
        guard printing else {
            try body(&self)
            return
        }
        // Each bound lifetime prints at least three bytes, so this many cannot fit anyway.
        guard count <= UInt64(Self.maximumOutput) else { throw .tooLong }
        if count > 0 {
            try emit("for<")
            for index in 0..<Int(count) {
                if index > 0 { try emit(", ") }
                boundLifetimes += 1
                try printLifetime(index: 1)
            }
            try emit("> ")
        }
        try body(&self)
        boundLifetimes -= Int(count)
    }

    /// A lifetime by De Bruijn index: 0 is `'_`, 1 the innermost bound one, named `'a`, `'b`, …
    /// from the outermost binder in, then `'_26`, `'_27`, ….
    private mutating func printLifetime(index: UInt64) throws(Failure) {
        guard printing else { return }
        try emit("'")
        if index == 0 {
            try emit("_")
            return
        }
        guard index <= UInt64(boundLifetimes) else { throw .invalid }
        let depth = boundLifetimes - Int(index)
        if depth < 26 {
            try emit(bytes: CollectionOfOne(UInt8(ascii: "a") + UInt8(depth)))
        } else {
            try emit("_")
            try emit(decimal: UInt64(depth))
        }
    }

    /// The printed name of a one-letter basic type.
    static func basicTypeName(_ tag: UInt8) -> StaticString? {
        switch tag {
        case UInt8(ascii: "b"): "bool"
        case UInt8(ascii: "c"): "char"
        case UInt8(ascii: "e"): "str"
        case UInt8(ascii: "u"): "()"
        case UInt8(ascii: "a"): "i8"
        case UInt8(ascii: "s"): "i16"
        case UInt8(ascii: "l"): "i32"
        case UInt8(ascii: "x"): "i64"
        case UInt8(ascii: "n"): "i128"
        case UInt8(ascii: "i"): "isize"
        case UInt8(ascii: "h"): "u8"
        case UInt8(ascii: "t"): "u16"
        case UInt8(ascii: "m"): "u32"
        case UInt8(ascii: "y"): "u64"
        case UInt8(ascii: "o"): "u128"
        case UInt8(ascii: "j"): "usize"
        case UInt8(ascii: "f"): "f32"
        case UInt8(ascii: "d"): "f64"
        case UInt8(ascii: "z"): "!"
        case UInt8(ascii: "p"): "_"
        case UInt8(ascii: "v"): "..."
        default: nil
        }
    }

    // MARK: Lists, skipping and back-references

    /// Prints elements separated by `separator` up to the closing `E`; returns how many.
    @discardableResult
    mutating func printList(
        separator: StaticString,
        _ element: (inout RustV0Demangler) throws(Failure) -> Void
    ) throws(Failure) -> Int {
        var count = 0
        while !eat(UInt8(ascii: "E")) {
            if count > 0 { try emit(separator) }
            try element(&self)
            count += 1
        }
        return count
    }

    /// Parses what `body` reads without printing it.
    private mutating func skipping(
        _ body: (inout RustV0Demangler) throws(Failure) -> Void
    ) throws(Failure) {
        let wasPrinting = printing
        printing = false
        try body(&self)
        printing = wasPrinting
    }

    /// Reads `<backref> = "B" <base-62-number>` (the `B` already read). The target must lie
    /// before the `B`. When printing, moves there and returns where to resume; when skipping,
    /// returns `nil` and the caller does not follow it.
    mutating func followBackReference() throws(Failure) -> Int? {
        let tagPosition = position - 1
        let target = try base62Number()
        guard target < UInt64(tagPosition) else { throw .invalid }
        guard printing else { return nil }
        // A reference into its own enclosing production would loop; the depth limit ends it.
        try enter()
        let resume = position
        position = Int(target)
        return resume
    }

    /// Returns from a back-reference followed with `followBackReference()`.
    mutating func returnFromBackReference(to resume: Int) {
        position = resume
        leave()
    }

    /// Enters a nested production.
    mutating func enter() throws(Failure) {
        depth += 1
        steps += 1
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        guard steps <= Self.maximumSteps else { throw .tooLong }
    }

    /// Leaves a nested production.
    mutating func leave() {
        depth -= 1
    }

    // MARK: Lexical elements

    /// The next byte, if any, without consuming it.
    func peek() -> UInt8? {
        position < symbol.count ? symbol[position] : nil
    }

    /// Consumes `byte` if it is next.
    mutating func eat(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        position += 1
        return true
    }

    /// Consumes and returns the next byte.
    mutating func next() throws(Failure) -> UInt8 {
        guard let byte = peek() else { throw .invalid }
        position += 1
        return byte
    }

    /// `<base-62-number> = {<0-9a-zA-Z>} "_"`: empty is 0, otherwise the digits' value plus one.
    mutating func base62Number() throws(Failure) -> UInt64 {
        if eat(UInt8(ascii: "_")) { return 0 }
        var value: UInt64 = 0
        while !eat(UInt8(ascii: "_")) {
            let byte = try next()
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit = byte - UInt8(ascii: "A") + 36
            default: throw .invalid
            }
            let (scaled, overflow) = value.multipliedReportingOverflow(by: 62)
            let (sum, carry) = scaled.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { throw .invalid }
            value = sum
        }
        guard value < UInt64.max else { throw .invalid }
        return value + 1
    }

    /// An optional `tag <base-62-number>`: 0 when absent, otherwise the number plus one.
    mutating func optionalBase62Number(tag: UInt8) throws(Failure) -> UInt64 {
        guard eat(tag) else { return 0 }
        let value = try base62Number()
        guard value < UInt64.max else { throw .invalid }
        return value + 1
    }

    /// `<disambiguator> = "s" <base-62-number>`, 0 when absent.
    mutating func disambiguator() throws(Failure) -> UInt64 {
        try optionalBase62Number(tag: UInt8(ascii: "s"))
    }

    /// `<identifier> = ["u"] <decimal-number> ["_"] <bytes>`; with `u`, the bytes are Punycode
    /// whose basic code points precede the last `_`.
    mutating func identifier() throws(Failure) -> RustIdentifier {
        let isPunycode = eat(UInt8(ascii: "u"))
        guard let first = peek(), Self.isDigit(first) else { throw .invalid }
        position += 1
        var length = Int(first - UInt8(ascii: "0"))
        // A leading 0 is the whole number.
        if length != 0 {
            while let byte = peek(), Self.isDigit(byte) {
                position += 1
                let (scaled, overflow) = length.multipliedReportingOverflow(by: 10)
                guard !overflow, scaled <= symbol.count else { throw .invalid }
                length = scaled + Int(byte - UInt8(ascii: "0"))
            }
        }
        // The `_` separates the length from identifiers that start with a digit or `_`.
        _ = eat(UInt8(ascii: "_"))
        guard length <= symbol.count - position else { throw .invalid }
        let bytes = symbol[position..<(position + length)]
        position += length
        guard isPunycode else { return RustIdentifier(ascii: bytes, punycode: []) }
        if let separator = bytes.lastIndex(of: UInt8(ascii: "_")) {
            let identifier = RustIdentifier(ascii: bytes[..<separator], punycode: bytes[(separator + 1)...])
            guard !identifier.punycode.isEmpty else { throw .invalid }
            return identifier
        }
        guard !bytes.isEmpty else { throw .invalid }
        return RustIdentifier(ascii: [], punycode: bytes)
    }

    /// Reads `<hex-digits> = {<0-9a-f>} "_"` and returns the digits.
    mutating func hexDigits() throws(Failure) -> ArraySlice<UInt8> {
        let start = position
        while true {
            let byte = try next()
            if byte == UInt8(ascii: "_") { break }
            guard Self.isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) else {
                throw .invalid
            }
        }
        return symbol[start..<(position - 1)]
    }

    static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    static func isUppercase(_ byte: UInt8) -> Bool { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) }
    static func isLowercase(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }

    // MARK: Output

    /// Appends `text` unless skipping.
    mutating func emit(_ text: StaticString) throws(Failure) {
        guard printing else { return }
        // A one-character literal may be stored as a scalar, not a pointer: go through the buffer.
        let limit = Self.maximumOutput
        let fits = text.withUTF8Buffer { buffer in
            guard output.count + buffer.count <= limit else { return false }
            output.append(contentsOf: buffer)
            return true
        }
        guard fits else { throw .tooLong }
    }

    /// Appends `bytes` unless skipping, within `maximumOutput`.
    mutating func emit(bytes: some Collection<UInt8>) throws(Failure) {
        guard printing else { return }
        guard output.count + bytes.count <= Self.maximumOutput else { throw .tooLong }
        output.append(contentsOf: bytes)
    }

    /// Appends `value` in decimal.
    mutating func emit(decimal value: UInt64) throws(Failure) {
        try emit(bytes: Array(String(value).utf8))
    }

    /// Appends one character as UTF-8.
    mutating func emit(scalar: Unicode.Scalar) throws(Failure) {
        var encoded: [UInt8] = []
        UTF8.encode(scalar) { encoded.append($0) }
        try emit(bytes: encoded)
    }

    /// Appends an identifier, decoding Punycode; one that does not decode is shown as
    /// `punycode{ascii-code}`, the standard spelling of what was mangled.
    mutating func emit(_ identifier: RustIdentifier) throws(Failure) {
        guard printing else { return }
        guard !identifier.punycode.isEmpty else {
            try emit(bytes: identifier.ascii)
            return
        }
        if let scalars = Punycode.decode(basic: identifier.ascii, deltas: identifier.punycode) {
            for scalar in scalars { try emit(scalar: scalar) }
        } else {
            try emit("punycode{")
            if !identifier.ascii.isEmpty {
                try emit(bytes: identifier.ascii)
                try emit("-")
            }
            try emit(bytes: identifier.punycode)
            try emit("}")
        }
    }
}
