import ArgumentParser
import CrashsymCommandLine
import SymBytes
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym llvm-symbolizer` (or crashsym run through a link named `llvm-symbolizer`):
    /// llvm-symbolizer's standard-input protocol, for sanitizer runtimes and scripts.
    struct LLVMSymbolizer: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "llvm-symbolizer",
            abstract: "Answer llvm-symbolizer's protocol (CODE/DATA lines on standard input) from crashsym's tables.",
            discussion: """
                Speaks llvm-symbolizer's protocol: each input line is `CODE module 0xoffset`, `DATA module \
                0xoffset`, `module 0xoffset`, or `0xoffset` with --obj=PATH. Answers (LLVM or JSON output \
                style) end with an empty line and are written before the next line is read, so a sanitizer \
                runtime on a pipe gets each answer at once. Modules (ELF files, converted in memory, or .csym \
                tables) are opened once per path; the tables of ELF files with a build-id and DWARF are kept \
                in symbolicate's cache ($CRASHSYM_CACHE_DIR, else $XDG_CACHE_HOME/crashsym, else \
                ~/.cache/crashsym) for later processes. Options llvm-symbolizer takes and crashsym does not act on \
                (--default-arch, --relative-address, --debuginfod, --dwp, --cache-size, --color…) are accepted \
                and ignored; an option llvm-symbolizer does not know is an error, worded as llvm words it (exit 1).

                Options: --obj/--exe/-e PATH, --inlines/--no-inlines (--inlining[=true|false], -i), \
                --demangle/--no-demangle (-C), --functions[=linkage|short|none] (-f), --output-style=LLVM|JSON, \
                --addresses (-a), --pretty-print (-p), --basenames (-s), --debug-file-directory DIR, \
                --adjust-vma=OFFSET (addresses are looked up at address - OFFSET and printed as given), \
                --print-source-context-lines=N (N source lines around each frame, when the file is here).

                Run as a sanitizer's symbolizer:
                  ln -s "$(command -v crashsym)" /tmp/bin/llvm-symbolizer
                  ASAN_SYMBOLIZER_PATH=/tmp/bin/llvm-symbolizer ./app
                """
        )

        @Argument(parsing: .captureForPassthrough,
                  help: ArgumentHelp("llvm-symbolizer options, then optional input lines (read from standard input when none).",
                                     valueName: "option-or-input"))
        var arguments: [String] = []

        func run() throws {
            let status = Self.serve(arguments: arguments, programName: "llvm-symbolizer")
            if status != 0 { throw ExitCode(status) }
        }

        /// Runs the protocol over `arguments` (no program name); `programName` prefixes errors,
        /// as llvm-symbolizer prefixes them with its argv[0]. Returns the exit status.
        static func serve(arguments: [String], programName: String) -> Int32 {
            let options = SymbolizerOptions.parse(arguments)
            if !options.errors.isEmpty {
                // As llvm-symbolizer: every refused option said, nothing answered.
                FileOutput.standardError(options.errors.map { $0 + "\n" }.joined())
                return 1
            }
            if options.help {
                FileOutput.standardOutput(helpMessage())
                return 0
            }
            if options.version {
                FileOutput.standardOutput("crashsym \(Crashsym.configuration.version) (llvm-symbolizer protocol)\n")
                return 0
            }
            var locator = DebugFileLocator(debugDirectories: options.debugDirectories)
            // As llvm-symbolizer does: debuginfod servers from $DEBUGINFOD_URLS.
            locator.debuginfod = DebuginfodProvider.Configuration.fromEnvironment()
            let cache = ModuleCache(locator: locator)
            var renderer = SymbolizerRenderer(options: options)
            var output: [UInt8] = []
            output.reserveCapacity(1 << 16)
            var reported = Set<String>()
            var sourceContext = SymbolizerSourceContext(lines: options.sourceContextLines)

            var parser = SymbolizerLineParser(object: options.object)
            func answer(_ bytes: UnsafeRawBufferPointer) {
                guard let parsed = parser.parse(bytes) else {
                    renderer.renderUnknown(.code, address: nil, moduleName: options.object ?? "", into: &output)
                    return
                }
                let request: SymbolizerRequest
                switch parsed {
                case .failure(let problem):
                    FileOutput.standardError("\(programName): error: '\(InputPreview.quote(bytes))': \(problem.message)\n")
                    // llvm-symbolizer answers a line it cannot parse as CODE, whatever its command.
                    renderer.renderUnknown(.code, address: nil, moduleName: problem.module, into: &output)
                    return
                case .success(let parsedRequest):
                    request = parsedRequest
                }
                let opened = cache.module(at: request.path)
                if case .failure(let error) = opened {
                    let message = Self.message(for: error)
                    if reported.insert(request.path).inserted {
                        FileOutput.standardError("\(programName): error: '\(request.path)': \(message)\n")
                    }
                    renderer.renderUnknown(request.kind, address: request.address, moduleName: request.module,
                                           message: message, into: &output)
                    return
                }
                guard case .success(let module) = opened, let printed = request.address else {
                    // A symbol name (`main+4`): not resolved here.
                    renderer.renderUnknown(request.kind, address: nil, moduleName: request.module, into: &output)
                    return
                }
                // `--adjust-vma`: the object is taken as moved by the offset; the answer names the
                // address as given.
                let address = printed &- options.adjustVMA
                let start = output.count
                switch request.kind {
                case .data:
                    renderer.renderData(address, module: module, moduleName: request.module, into: &output)
                case .code:
                    do {
                        try renderer.renderCode(address, module: module, moduleName: request.module, into: &output)
                        try sourceContext.complete(answerAt: start, of: &output, address: address, module: module, options: options)
                    } catch {
                        output.removeSubrange(start...)
                        FileOutput.standardError("\(programName): error: '\(request.path)': \(error.message)\n")
                        renderer.renderUnknown(.code, address: address, moduleName: request.module,
                                               message: error.message, into: &output)
                    }
                case .frame:
                    renderer.renderFrame(address, moduleName: request.module, into: &output)
                }
                if address != printed && (options.printAddress || options.outputStyle == .json) {
                    Self.replaceAddress(address, with: printed, inAnswerAt: start, of: &output)
                }
            }

            if options.inputs.isEmpty {
                InputLines.forEachLine(of: STDIN_FILENO, answer) {
                    FileOutput.writeAll(output, to: STDOUT_FILENO)
                    output.removeAll(keepingCapacity: true)
                }
            } else {
                for input in options.inputs {
                    var copy = input
                    copy.withUTF8 { answer(UnsafeRawBufferPointer($0)) }
                }
            }
            FileOutput.writeAll(output, to: STDOUT_FILENO)
            return 0
        }

        /// The answer at `output[start...]` with its first `0x…` of `address` (the `-a` line or
        /// JSON's `"Address"`, which come first) spelling `printed` instead.
        static func replaceAddress(_ address: UInt64, with printed: UInt64, inAnswerAt start: Int, of output: inout [UInt8]) {
            let old = Array(("0x" + String(address, radix: 16)).utf8), new = Array(("0x" + String(printed, radix: 16)).utf8)
            var index = start
            while index + old.count <= output.count {
                if output[index..<(index + old.count)].elementsEqual(old),
                   index + old.count == output.count || !Self.isHexDigit(output[index + old.count]) {
                    output.replaceSubrange(index..<(index + old.count), with: new)
                    return
                }
                index += 1
            }
        }

        private static func isHexDigit(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
        }

        /// llvm-symbolizer's wording for the common failures.
        static func message(for error: FormatError) -> String {
            switch error.code {
            case .io where error.message.hasPrefix("cannot open: "):
                return String(error.message.dropFirst("cannot open: ".count))
            case .badMagic:
                return "The file was not recognized as a valid object file"
            default:
                return error.message
            }
        }
    }
}

/// Reads a file descriptor line by line. Every complete line of a read is handed over before the
/// next read, and `afterChunk` runs before blocking again, so a partner on a pipe that waits for
/// each answer gets it.
enum InputLines {
    /// Longest line kept whole (1 MiB); no path and address come near it.
    static let maximumLineLength = 1 << 20

    static func forEachLine(of descriptor: Int32, _ body: (UnsafeRawBufferPointer) -> Void,
                            afterChunk: () -> Void) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: chunk[0..<count])
            var lineStart = 0
            pending.withUnsafeBytes { bytes in
                var index = 0
                while index < bytes.count {
                    if bytes[index] == 0x0a {
                        body(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index]))
                        lineStart = index + 1
                    }
                    index += 1
                }
            }
            pending.removeFirst(lineStart)
            // A line without end cannot grow without bound: past the limit it is answered as it is.
            if pending.count > maximumLineLength {
                pending.withUnsafeBytes { body($0) }
                pending.removeAll(keepingCapacity: true)
            }
            afterChunk()
        }
        if !pending.isEmpty { pending.withUnsafeBytes { body($0) } }
        afterChunk()
    }
}
