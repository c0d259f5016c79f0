#if canImport(Glibc)
import Glibc
import Symbolication
#endif

/// llvm-symbolizer's command-line options, parsed its way (LLVM 21's `Opts.td` and OptTable):
/// `--name`, `--name=value`, `--name value`, grouped single-letter flags behind one dash (`-Cfi`,
/// `-eprog`, `-f=short`). An option llvm-symbolizer does not know is an error worded as llvm words
/// it (`errors`); options it knows that do not change our answers are accepted and ignored.
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
    /// `--adjust-vma`: added to the object's addresses, so an input address is looked up at
    /// `address - adjustVMA` (wrapping, as llvm's unsigned arithmetic) and printed as given.
    public var adjustVMA: UInt64 = 0
    /// `--print-source-context-lines`: source lines printed around each frame's line (none when
    /// zero or negative).
    public var sourceContextLines: Int64 = 0
    /// `--debug-file-directory`: where separate debug files are looked for.
    public var debugDirectories: [String] = []
    /// Positional arguments: input lines given on the command line instead of standard input.
    public var inputs: [String] = []
    /// `--help`, `--version`.
    public var help = false, version = false
    /// Values not supported, kept for a diagnostic (`--output-style=GNU`); llvm accepts them.
    public var ignored: [String] = []
    /// What llvm-symbolizer refuses, one line each in its words (`error: unknown argument
    /// '--frob'`): the program prints them and exits with status 1.
    public var errors: [String] = []

    /// Creates the defaults.
    public init() {}

    /// Options taking a value, joined (`--name=value`) or as the next argument.
    private static let valued: Set<String> = [
        "obj", "exe", "output-style", "default-arch", "debug-file-directory", "dsym-hint",
        "fallback-debug-path", "dwp", "cache-size", "adjust-vma", "build-id", "gsym-file-directory",
        "print-source-context-lines",
    ]
    /// Flags that also take a joined value (`--functions=short`, `--inlining=false`, `--color=never`).
    private static let optionalValue: Set<String> = ["functions", "inlining", "color"]
    /// Flags (`--name` only).
    private static let flags: Set<String> = [
        "addresses", "print-address", "basenames", "color", "demangle", "no-demangle", "debuginfod",
        "no-debuginfod", "dia", "disable-gsym", "filter-markup", "functions", "help", "inlines", "inlining",
        "no-inlines", "no-untag-addresses", "untag-addresses", "pretty-print", "relative-address",
        "relativenames", "skip-line-zero", "verbose", "version",
    ]
    /// Single-letter flags, which may be grouped behind one dash.
    private static let letters: Set<Character> = ["a", "C", "f", "h", "i", "p", "s", "v"]
    /// Options whose value must be a number (`getAsInteger`; llvm's wording on failure).
    private static let numeric: Set<String> = ["adjust-vma", "cache-size", "print-source-context-lines"]

    /// Parses `arguments` (without the program name).
    public static func parse(_ arguments: [String]) -> SymbolizerOptions {
        var options = SymbolizerOptions()
        var index = 0
        func nextValue() -> String? {
            guard index < arguments.count else { return nil }
            index += 1
            return arguments[index - 1]
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if !argument.hasPrefix("-") || argument == "-" {
                options.inputs.append(argument)
                continue
            }
            if argument == "-demangle=true" || argument == "-demangle=false" {
                options.demangle = argument.hasSuffix("true")
                continue
            }
            guard argument.hasPrefix("--") else {
                options.parseGroup(argument.dropFirst(), next: nextValue)
                continue
            }
            let body = argument.dropFirst(2)
            var name = String(body), value: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                value = String(body[body.index(after: equals)...])
            }
            if Self.valued.contains(name) {
                if value == nil {
                    guard let next = nextValue() else {
                        options.errors.append("error: --\(name): missing argument")
                        continue
                    }
                    value = next
                }
                options.apply(name, value)
            } else if Self.flags.contains(name) && (value == nil || Self.optionalValue.contains(name)) {
                options.apply(name, value)
            } else {
                options.errors.append("error: unknown argument '\(argument)'")
            }
        }
        return options
    }

    /// `-abc` after its dash: grouped letters, as llvm's OptTable reads them. `e` takes the rest of
    /// the argument (or the next one) as the object, `f=` a value; an unknown letter is an error of
    /// its own, and a flag followed by `=` makes the rest one unknown argument.
    private mutating func parseGroup(_ group: Substring, next: () -> String?) {
        var rest = group
        while let letter = rest.first {
            let after = rest.dropFirst()
            if letter == "e" {
                var value = after.hasPrefix("=") ? String(after.dropFirst()) : String(after)
                if after.isEmpty {
                    guard let following = next() else {
                        errors.append("error: -e: missing argument")
                        return
                    }
                    value = following
                }
                apply("obj", value)
                return
            }
            if letter == "f", after.hasPrefix("=") {
                apply("functions", String(after.dropFirst()))
                return
            }
            guard Self.letters.contains(letter) else {
                errors.append("error: unknown argument '-\(letter)'")
                rest = after
                continue
            }
            if after.hasPrefix("=") {
                errors.append("error: unknown argument '-\(rest)'")
                return
            }
            apply(String(letter), nil)
            rest = after
        }
    }

    /// Applies one known option.
    private mutating func apply(_ name: String, _ value: String?) {
        func isTrue(_ value: String?) -> Bool { value == nil || value == "true" || value == "1" }
        if Self.numeric.contains(name) {
            // `getAsInteger` with radix 0; the context line count is signed.
            let text = value ?? ""
            let number: Int64?
            if name == "print-source-context-lines", text.hasPrefix("-") {
                number = Self.integer(String(text.dropFirst())).flatMap { Int64(exactly: $0) }.map { -$0 }
            } else {
                number = Self.integer(text).flatMap { name == "adjust-vma" ? Int64(bitPattern: $0) : Int64(exactly: $0) }
            }
            guard let number else {
                errors.append("--\(name)=: expected a non-negative integer, but got '\(text)'")
                return
            }
            if name == "adjust-vma" { adjustVMA = UInt64(bitPattern: number) }
            if name == "print-source-context-lines" { sourceContextLines = number }
            return
        }
        switch name {
        case "obj", "exe", "e": object = value
        case "inlines", "i": inlines = true
        case "inlining": inlines = isTrue(value)
        case "no-inlines": inlines = false
        case "demangle", "C": demangle = true
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
        default:
            // Known and without effect here: architecture selection (ELF files have one), COFF
            // image-base addresses, debuginfod, GSYM and dSYM paths, markup filtering, colour.
            break
        }
    }

    /// A number as `StringRef::getAsInteger` with radix 0 reads it.
    private static func integer(_ text: String) -> UInt64? {
        var text = text
        return text.withUTF8 { SymbolizerRequest.parseInteger(UnsafeRawBufferPointer($0)) }
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
