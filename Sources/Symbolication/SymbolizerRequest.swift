/// llvm-symbolizer's command-line options, parsed its way (`--name`, `-name`, `--name=value`,
/// `--name value`, grouped short flags) and tolerant: options that do not change our answers
/// and options we do not know are skipped, since a sanitizer runtime or script passing them must
/// still get answers. Follows `llvm/tools/llvm-symbolizer/Opts.td` (LLVM 21).
public struct SymbolizerOptions: Sendable, Equatable {
    /// `--output-style`.
    public enum OutputStyle: Sendable, Equatable {
        case llvm, json
    }

    /// `--functions`.
    public enum FunctionNames: Sendable, Equatable {
        case none, short, linkage
    }

    /// `--obj`/`--exe`/`-e`: the module every input line refers to.
    public var object: String?
    /// `--inlines` (default) / `--no-inlines`.
    public var inlines = true
    /// `--demangle` (default) / `--no-demangle`.
    public var demangle = true
    /// `--functions=linkage` (default), `short` or `none`.
    public var functions: FunctionNames = .linkage
    /// `--output-style=LLVM` (default) or `JSON`.
    public var outputStyle: OutputStyle = .llvm
    /// `--addresses`/`-a`: print the address before each answer.
    public var printAddress = false
    /// `--pretty-print`/`-p`.
    public var pretty = false
    /// `--basenames`/`-s`: file names without directories.
    public var basenames = false
    /// `--debug-file-directory`: where separate debug files are looked for.
    public var debugDirectories: [String] = []
    /// Positional arguments: input lines given on the command line instead of standard input.
    public var inputs: [String] = []
    /// `--help`, `--version`.
    public var help = false, version = false
    /// Options not understood (kept for a diagnostic), and unsupported values (`--output-style=GNU`).
    public var ignored: [String] = []

    /// Creates the defaults.
    public init() {}

    /// Options taking a value; a value not joined with `=` is the next argument.
    private static let valued: Set<String> = [
        "obj", "exe", "e", "output-style", "default-arch", "debug-file-directory", "dsym-hint",
        "fallback-debug-path", "dwp", "cache-size", "adjust-vma", "build-id", "gsym-file-directory",
        "print-source-context-lines",
    ]
    /// Flags that may be grouped behind one dash (`-Cfi`).
    private static let groupable: Set<Character> = ["a", "C", "f", "i", "p", "s"]

    /// Parses `arguments` (without the program name).
    public static func parse(_ arguments: [String]) -> SymbolizerOptions {
        var options = SymbolizerOptions()
        var index = 0
        var onlyPositional = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositional || !argument.hasPrefix("-") || argument == "-" {
                options.inputs.append(argument)
                continue
            }
            if argument == "--" { onlyPositional = true; continue }
            let body = argument.hasPrefix("--") ? argument.dropFirst(2) : argument.dropFirst()
            var name = String(body), value: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                value = String(body[body.index(after: equals)...])
            }
            if value == nil, Self.valued.contains(name) {
                if index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else {
                    options.ignored.append(argument)
                    continue
                }
            }
            if !options.apply(name, value), !argument.hasPrefix("--"), value == nil,
               name.count > 1, name.allSatisfy({ groupable.contains($0) }) {
                for flag in name { _ = options.apply(String(flag), nil) }
            } else if !options.known(name) {
                options.ignored.append(argument)
            }
        }
        return options
    }

    private func known(_ name: String) -> Bool {
        var copy = self
        return copy.apply(name, nil) || Self.valued.contains(name) || name == "inlining" || name == "demangle"
    }

    /// Applies one option; false when `name` is not one we act on or accept.
    private mutating func apply(_ name: String, _ value: String?) -> Bool {
        func isTrue(_ value: String?) -> Bool { value == nil || value == "true" || value == "1" }
        switch name {
        case "obj", "exe", "e": object = value
        case "inlines", "i", "inlining": inlines = isTrue(value)
        case "no-inlines": inlines = false
        case "demangle", "C": demangle = isTrue(value)
        case "no-demangle": demangle = false
        case "functions", "f":
            switch value {
            case nil, "linkage": functions = .linkage
            case "short": functions = .short
            case "none": functions = .none
            default: ignored.append("--functions=\(value ?? "")")
            }
        case "output-style":
            switch value?.uppercased() {
            case "LLVM": outputStyle = .llvm
            case "JSON": outputStyle = .json
            default: ignored.append("--output-style=\(value ?? "")")
            }
        case "addresses", "print-address", "a": printAddress = true
        case "pretty-print", "p": pretty = true
        case "basenames", "s": basenames = true
        case "debug-file-directory": if let value { debugDirectories.append(value) }
        case "help", "h": help = true
        case "version", "v": version = true
        // Accepted and without effect here: architecture selection (ELF files have one), COFF
        // image-base addresses, and flags older sanitizer runtimes pass.
        case "default-arch", "relative-address", "use-symbol-table", "no-debuginfod", "debuginfod",
             "untag-addresses", "no-untag-addresses", "relativenames", "verbose", "color":
            break
        default: return false
        }
        return true
    }
}

/// One input line of llvm-symbolizer's protocol: `[CODE|DATA|FRAME] [FILE:]module offset`,
/// `module offset`, or `offset` when `--obj` names the module (`parseCommand` in
/// `llvm-symbolizer.cpp`).
public struct SymbolizerRequest: Sendable, Equatable {
    /// What is asked.
    public enum Kind: Sendable, Equatable {
        case code, data, frame
    }

    /// Why a line is not a request; the message is llvm-symbolizer's.
    public struct Problem: Error, Sendable, Equatable {
        /// llvm-symbolizer's wording.
        public var message: String
        /// The module named before the problem was found (for the unknown answer).
        public var module: String
    }

    /// What is asked.
    public var kind: Kind
    /// The module path as written (quotes removed, an `:arch` suffix kept).
    public var module: String
    /// The module offset; nil when the line names a symbol (`main+4`), which is answered unknown.
    public var address: UInt64?

    /// The module's file path: `module` without a trailing `:arch` that names an architecture.
    public var path: String {
        guard let colon = module.lastIndex(of: ":") else { return module }
        let suffix = module[module.index(after: colon)...]
        return Self.architectures.contains(String(suffix)) ? String(module[..<colon]) : module
    }

    static let architectures: Set<String> = [
        "x86_64", "x86_64h", "i386", "i486", "i586", "i686", "x86", "aarch64", "arm64", "arm64e", "arm",
        "armv6", "armv7", "armv7k", "armv7s", "armv7em", "thumb", "thumbv7", "riscv64", "riscv32",
        "ppc64", "ppc64le", "powerpc64", "powerpc64le", "s390x", "mips", "mipsel", "mips64", "mips64el",
        "loongarch64", "sparcv9", "wasm32", "wasm64",
    ]

    /// Parses `line` (without its newline) given `--obj`'s value; a `Problem` when llvm-symbolizer
    /// would report an error. An empty line is nil: it gets an unknown answer and no error.
    public static func parse(_ line: Substring, object: String?) -> Result<SymbolizerRequest, Problem>? {
        var rest = line
        rest.removeAll { $0 == "\r" || $0 == "\n" }
        if rest.isEmpty { return nil }
        var kind = Kind.code
        if rest.hasPrefix("CODE ") { rest = rest.dropFirst(5) }
        else if rest.hasPrefix("DATA ") { kind = .data; rest = rest.dropFirst(5) }
        else if rest.hasPrefix("FRAME ") { kind = .frame; rest = rest.dropFirst(6) }
        var module = object ?? ""
        var hasFilePrefix = false
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            if rest.hasPrefix("FILE:") {
                if hasFilePrefix { return .failure(Problem(message: "duplicate input file specification prefix", module: module)) }
                hasFilePrefix = true
                rest = rest.dropFirst(5)
                continue
            }
            break
        }
        if hasFilePrefix {
            if rest.isEmpty { return .failure(Problem(message: "must be followed by an input file", module: module)) }
            if object != nil { return .failure(Problem(message: "input file has already been specified", module: module)) }
            guard let name = spaceDelimitedWord(&rest) else {
                return .failure(Problem(message: "unbalanced quotes in input file name", module: module))
            }
            module = String(name)
        } else if object == nil {
            guard let name = spaceDelimitedWord(&rest), !name.isEmpty else {
                return .failure(Problem(message: "no input filename has been specified", module: ""))
            }
            module = String(name)
        }
        rest = rest.drop { " \t\n\r\u{0B}\u{0C}".contains($0) }
        while let last = rest.last, " \t\n\r\u{0B}\u{0C}".contains(last) { rest = rest.dropLast() }
        if rest.isEmpty { return .failure(Problem(message: "no module offset has been specified", module: module)) }
        let specification = rest.prefix { $0 != " " && $0 != "\n" && $0 != "\r" }
        let address = parseInteger(specification)
        if address == nil, let first = specification.first, first.isASCII, first.isNumber {
            return .failure(Problem(message: "expected a number as module offset", module: module))
        }
        return .success(SymbolizerRequest(kind: kind, module: module, address: address))
    }

    /// llvm's `getSpaceDelimitedWord`: a word, or a quoted string without its quotes; nil for an
    /// unbalanced quote.
    static func spaceDelimitedWord(_ source: inout Substring) -> Substring? {
        source = source.drop { $0 == " " || $0 == "\n" || $0 == "\r" }
        if let quote = source.first, quote == "\"" || quote == "'" {
            let body = source.dropFirst()
            guard let end = body.firstIndex(of: quote) else { return nil }
            source = body[body.index(after: end)...]
            return body[..<end]
        }
        let word = source.prefix { $0 != " " && $0 != "\n" && $0 != "\r" }
        source = source[word.endIndex...]
        return word
    }

    /// `StringRef::getAsInteger` with radix 0: `0x` hex, `0b` binary, `0o` or a leading `0` octal,
    /// else decimal; nil on any other character or on overflow.
    static func parseInteger(_ text: Substring) -> UInt64? {
        var digits = text
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { radix = 16; digits = digits.dropFirst(2) }
        else if digits.hasPrefix("0b") || digits.hasPrefix("0B") { radix = 2; digits = digits.dropFirst(2) }
        else if digits.hasPrefix("0o") { radix = 8; digits = digits.dropFirst(2) }
        else if digits.count > 1 && digits.hasPrefix("0") { radix = 8; digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits.utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = UInt64(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit = UInt64(byte - UInt8(ascii: "A")) + 10
            default: return nil
            }
            guard digit < radix else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (sum, overflow2) = shifted.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }
}
