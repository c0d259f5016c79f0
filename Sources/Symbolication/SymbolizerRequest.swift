#if canImport(Glibc)
import Glibc
#endif

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
    /// The module as written (quotes removed, an `:arch` suffix kept).
    public var module: String
    /// The module's file path: `module` without a trailing `:arch` that names an architecture.
    public var path: String
    /// The module offset; nil when the line names a symbol (`main+4`), which is answered unknown.
    public var address: UInt64?

    static let architectures: Set<String> = [
        "x86_64", "x86_64h", "i386", "i486", "i586", "i686", "x86", "aarch64", "arm64", "arm64e", "arm",
        "armv6", "armv7", "armv7k", "armv7s", "armv7em", "thumb", "thumbv7", "riscv64", "riscv32",
        "ppc64", "ppc64le", "powerpc64", "powerpc64le", "s390x", "mips", "mipsel", "mips64", "mips64el",
        "loongarch64", "sparcv9", "wasm32", "wasm64",
    ]

    /// `StringRef::getAsInteger` with radix 0: `0x` hex, `0b` binary, `0o` or a leading `0` octal,
    /// else decimal; nil on any other character or on overflow.
    static func parseInteger(_ text: UnsafeRawBufferPointer) -> UInt64? {
        var index = 0
        var radix: UInt64 = 10
        if text.count >= 2 && text[0] == UInt8(ascii: "0") {
            switch text[1] {
            case UInt8(ascii: "x"), UInt8(ascii: "X"): radix = 16; index = 2
            case UInt8(ascii: "b"), UInt8(ascii: "B"): radix = 2; index = 2
            case UInt8(ascii: "o"): radix = 8; index = 2
            default: radix = 8; index = 1
            }
        }
        guard index < text.count else { return nil }
        var value: UInt64 = 0
        while index < text.count {
            let byte = text[index]
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
            index += 1
        }
        return value
    }
}

/// Parses llvm-symbolizer input lines from bytes. Keeps the last module name it made, so a stream
/// of lines about one module makes no `String` per line: the hot path of a sanitizer report or a
/// batch of lookups.
public struct SymbolizerLineParser {
    /// `--obj`'s value: the module of lines that name none.
    public let object: String?
    private var lastModuleBytes: [UInt8] = []
    private var lastModule = ""
    private var lastPath = ""

    /// Creates a parser.
    public init(object: String?) {
        self.object = object
    }

    /// Parses `line` (without its newline); a `Problem` when llvm-symbolizer would report an
    /// error. An empty line is nil: it gets an unknown answer and no error.
    public mutating func parse(_ line: UnsafeRawBufferPointer) -> Result<SymbolizerRequest, SymbolizerRequest.Problem>? {
        // llvm-symbolizer drops every CR and LF of a line, wherever they are.
        if line.contains(0x0d) || line.contains(0x0a) {
            let kept = line.filter { $0 != 0x0d && $0 != 0x0a }
            return kept.withUnsafeBytes { parseClean($0) }
        }
        return parseClean(line)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0d).contains(byte)
    }

    private static func hasPrefix(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard bytes.count - start >= count else { return false }
        return prefix.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[start + offset] != expected[offset] { return false }
            return true
        }
    }

    private mutating func parseClean(_ line: UnsafeRawBufferPointer) -> Result<SymbolizerRequest, SymbolizerRequest.Problem>? {
        typealias Problem = SymbolizerRequest.Problem
        if line.isEmpty { return nil }
        var index = 0, end = line.count
        var kind = SymbolizerRequest.Kind.code
        if Self.hasPrefix(line, 0, "CODE ") { index = 5 }
        else if Self.hasPrefix(line, 0, "DATA ") { kind = .data; index = 5 }
        else if Self.hasPrefix(line, 0, "FRAME ") { kind = .frame; index = 6 }
        var module = object ?? "", path = object ?? ""
        var hasFilePrefix = false
        while true {
            while index < end && Self.isSpace(line[index]) { index += 1 }
            if Self.hasPrefix(line, index, "FILE:") {
                if hasFilePrefix { return .failure(Problem(message: "duplicate input file specification prefix", module: module)) }
                hasFilePrefix = true
                index += 5
                continue
            }
            break
        }
        if hasFilePrefix || object == nil {
            if hasFilePrefix && index == end { return .failure(Problem(message: "must be followed by an input file", module: module)) }
            if hasFilePrefix && object != nil { return .failure(Problem(message: "input file has already been specified", module: module)) }
            // llvm's getSpaceDelimitedWord: a quoted string without its quotes, or a word.
            while index < end && (line[index] == 0x20 || line[index] == 0x0a || line[index] == 0x0d) { index += 1 }
            var wordStart = index, wordEnd = index
            if index < end && (line[index] == UInt8(ascii: "\"") || line[index] == UInt8(ascii: "'")) {
                let quote = line[index]
                wordStart = index + 1
                var close = wordStart
                while close < end && line[close] != quote { close += 1 }
                guard close < end else {
                    let message = hasFilePrefix ? "unbalanced quotes in input file name" : "no input filename has been specified"
                    return .failure(Problem(message: message, module: module))
                }
                wordEnd = close
                index = close + 1
            } else {
                while wordEnd < end && line[wordEnd] != 0x20 && line[wordEnd] != 0x0a && line[wordEnd] != 0x0d { wordEnd += 1 }
                index = wordEnd
            }
            if wordStart == wordEnd && !hasFilePrefix {
                return .failure(Problem(message: "no input filename has been specified", module: ""))
            }
            (module, path) = intern(UnsafeRawBufferPointer(rebasing: line[wordStart..<wordEnd]))
        }
        while index < end && Self.isSpace(line[index]) { index += 1 }
        while end > index && Self.isSpace(line[end - 1]) { end -= 1 }
        if index == end { return .failure(Problem(message: "no module offset has been specified", module: module)) }
        var specificationEnd = index
        while specificationEnd < end && line[specificationEnd] != 0x20 { specificationEnd += 1 }
        let specification = UnsafeRawBufferPointer(rebasing: line[index..<specificationEnd])
        let address = SymbolizerRequest.parseInteger(specification)
        if address == nil, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(specification[0]) {
            return .failure(Problem(message: "expected a number as module offset", module: module))
        }
        return .success(SymbolizerRequest(kind: kind, module: module, path: path, address: address))
    }

    /// The module name and its path (an architecture suffix removed), reusing the last ones when
    /// the bytes are the same.
    private mutating func intern(_ bytes: UnsafeRawBufferPointer) -> (String, String) {
        let same = bytes.count == lastModuleBytes.count && lastModuleBytes.withUnsafeBytes { last in
            bytes.isEmpty || memcmp(last.baseAddress!, bytes.baseAddress!, bytes.count) == 0
        }
        if same { return (lastModule, lastPath) }
        lastModuleBytes = Array(bytes)
        lastModule = String(decoding: bytes, as: UTF8.self)
        lastPath = lastModule
        if let colon = bytes.lastIndex(of: UInt8(ascii: ":")) {
            let suffix = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)...]), as: UTF8.self)
            if SymbolizerRequest.architectures.contains(suffix) {
                lastPath = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self)
            }
        }
        return (lastModule, lastPath)
    }
}
