import ArgumentParser
import CrashsymCommandLine
import SymBytes
import SymReport
import Symbolication
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension ReportFormat: ExpressibleByArgument {}

extension Crashsym {
    /// `crashsym symbolicate`: crash reports in, symbolicated reports out.
    struct Symbolicate: ParsableCommand {
        static let configuration = CommandConfiguration(
            _superCommandName: "crashsym",  // for `Crashsym.quickParse`, which says why
            abstract: "Symbolicate crash reports: sanitizer output, Swift backtraces, tombstones, glibc backtraces, eu-stack, crashsym JSON, core files, minidumps.",
            discussion: """
                The format is detected (--input-format forces one). A text report is reprinted line for line, each frame line completed with function and file:line, and one line per enclosing inlined frame under it; --format json prints the model of docs/crash-report.md instead. Frames that do not resolve are flagged ([crashsym: build-id-mismatch: …]); --explain says what was tried.

                A core file (ELF ET_CORE) or a Breakpad/Crashpad minidump is detected by its first bytes and read through a mapping: every thread's stack is walked (call-frame information of each module's ELF file, found like its symbols; else frame pointers, then stack scanning) and printed like eu-stack -i output (PID n - core, TID n:, #N 0xPC), completed as the other formats are, each frame followed by how it was found (Found by: context, cfi, frame-pointer or scan; "found_by" in JSON); --format json marks the crashed thread and gives the signal. A core or minidump may come on standard input (crashsym symbolicate - < core): it is copied to an unlinked temporary file under $TMPDIR in constant memory and mapped. Pass the program with --executable (or --symbols) when the core's paths are not on this machine. A core or minidump whose threads walk to more than --max-report-frames frames in all is refused as soon as the walks pass it (exit 1), as the server refuses it.

                Symbols are looked up by GNU build-id, in order: --symbols paths (directories of .csym tables, ELF files or .build-id trees; repeatable), the conversion cache, the module path in the report when its build-id matches, --debug-dir and /usr/lib/debug .build-id trees, .gnu_debuglink. A file with another build-id is never used. ELF files are converted on the fly and cached under --cache-dir (precedence: --cache-dir, then $CRASHSYM_CACHE_DIR, then $XDG_CACHE_HOME/crashsym, then ~/.cache/crashsym).

                Several reports (or a directory of reports) are symbolicated on --jobs threads and printed in input order, each text report under a '==> path <==' header, each JSON report on one line with its "source" path; a report that cannot be read is a line {"source": path, "error": {"code", "message"}} (and a message on stderr).

                Standard input is read as a stream (adb logcat | crashsym symbolicate, tail -f app.log | crashsym symbolicate): lines that are not part of a crash report are printed at once, and each report as soon as it ends (its last frame line followed by another line, or a pause of the input of 300 ms), with the same output as the whole input would give. With --format json, or a JSON report, standard input is read to its end.

                Exit status: 0 when every report was read (flagged frames included), 1 when one could not be (or standard input held none), 2 usage error.

                Examples:
                  crashsym symbolicate asan.log --symbols build/
                  crashsym symbolicate tombstone_03 --symbols symbols/ --format json
                  crashsym symbolicate core.1234 --symbols build/app
                  coredumpctl dump -o - | crashsym symbolicate --executable build/app
                  ASAN_OPTIONS=symbolize=0 ./app 2>&1 | crashsym symbolicate --explain
                """
        )

        @Argument(help: ArgumentHelp("Report files or directories of reports ('-' or none: standard input).", valueName: "report"))
        var reports: [String] = []

        @Option(name: .customLong("symbols"), help: ArgumentHelp("Directory of .csym tables, ELF files or .build-id trees, or one such file (repeatable).", valueName: "path"))
        var symbolPaths: [String] = []

        @Option(name: .customLong("input-format"), help: ArgumentHelp("Input format instead of detection.", valueName: "format"))
        var inputFormat: ReportFormat?

        @Option(name: .customLong("executable"), help: ArgumentHelp("The program of a core file, when the path the core names is not on this machine (checked against the build-id the core kept; also searched for symbols).", valueName: "path"))
        var executable: String?

        @Option(help: "Output format: text (the report in place) or json.")
        var format: OutputFormat = .text

        @Flag(help: "For every frame that did not resolve, say which sources were tried and what was found; for a frame resolved from a table fetched from --server, say so (fetched from <server>).")
        var explain = false

        @Flag(name: .customLong("no-module-paths"), help: "Do not read the module paths named in the report.")
        var noModulePaths = false

        @Option(name: .customLong("cache-dir"), help: ArgumentHelp("Cache of converted tables.", valueName: "dir"))
        var cacheDirectory: String?

        @Flag(name: .customLong("no-cache"), help: "Neither read nor write the conversion cache.")
        var noCache = false

        @Option(name: .shortAndLong, help: "Reports symbolicated in parallel (default: number of cores).")
        var jobs: Int?

        @Option(name: .customLong("max-report-frames"), help: ArgumentHelp("Most stack frames walked from one core or minidump, its threads together (default \(Symbolicator.defaultMaximumReportFrames), as crashsym serve): a dump that walks to more (a hostile thread list, stacks that loop) is an error, exit 1, and is not printed in part.", valueName: "n"))
        var maxReportFrames: Int = Symbolicator.defaultMaximumReportFrames

        @OptionGroup var naming: NameOptions

        @OptionGroup var debug: DebugOptions

        @OptionGroup(title: "Symbols from a crashsym server") var server: ServerOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
            if maxReportFrames < 1 { throw ValidationError("--max-report-frames must be at least 1") }
        }

        func run() throws {
            var sources = SymbolSources(
                searchPaths: symbolPaths, useModulePaths: !noModulePaths, locator: debug.locator,
                cacheDirectory: noCache ? nil : (cacheDirectory ?? SymbolSources.defaultCacheDirectory),
                decoder: debug.decoder)
            sources.server = try server.configuration(cacheDirectory: cacheDirectory ?? SymbolSources.defaultCacheDirectory)
            let symbolicator = Symbolicator(sources: sources, renderings: format == .json ? .json : .text,
                                            demangler: naming.demangler, executable: executable)
            // The process ends with this command: its caches (a few hundred thousand objects after
            // a big run) go with the process instead of being freed one by one.
            _ = Unmanaged.passRetained(symbolicator)
            var inputs: [String] = []
            for path in reports.isEmpty ? ["-"] : reports {
                if path != "-" && FileSystem.kind(of: path) == .directory {
                    inputs.append(contentsOf: FileSystem.files(under: path))
                } else {
                    inputs.append(path)
                }
            }
            let json = format == .json, explain = self.explain, several = inputs.count > 1, maximumFrames = maxReportFrames
            let render: @Sendable (SymbolicatedReport) -> [UInt8] = { result in
                var bytes: [UInt8] = []
                // About what a frame takes (an inline chain of two or three), and for text the
                // lines reprinted, to grow once or never.
                bytes.reserveCapacity(1024 + result.report.frameCount * (json ? 512 : 192)
                                      + (json ? 0 : result.report.lines.reduce(0) { $0 + $1.utf8.count + 1 }))
                if json { ReportWriter.writeJSON(result, explain: explain, into: &bytes) }
                else { ReportWriter.writeText(result, explain: explain, into: &bytes) }
                return bytes
            }
            // Written in chunks of about 64 KiB; reports reach it in input order, one at a time.
            let output = Mutex(Output())
            let files = inputs.filter { $0 != "-" }
            if files.count < inputs.count {
                let symbolicate: (String) throws(FormatError) -> [UInt8] = { text throws(FormatError) in
                    render(symbolicator.symbolicate(try CrashReport.parse(text, format: inputFormat)))
                }
                // Its first bytes say whether standard input is a core file or a minidump.
                let head = Self.readHead()
                let failed: Bool
                if let binary = head.withUnsafeBytes(Symbolicator.binaryFormat(of:)) ?? inputFormat.flatMap({ $0.isBinary ? $0 : nil }) {
                    failed = Self.symbolicateBinaryStandardInput(head, format: binary, symbolicator: symbolicator, json: json,
                                                                 maximumFrames: maximumFrames, render: render)
                } else {
                    failed = json ? Self.symbolicateStandardInput(head, symbolicate)
                                  : Self.streamStandardInput(head, format: inputFormat, symbolicate)
                }
                if failed { output.withLock { $0.failed = true } }
            }
            symbolicator.symbolicateFiles(files, inputFormat: inputFormat, jobs: jobs ?? FileSystem.processorCount,
                                          maximumFrames: maximumFrames, render: render) { index, outcome in
                output.withLock { output in
                    switch outcome {
                    case .success(let bytes):
                        if several && !json { output.bytes.append(contentsOf: "==> \(files[index]) <==\n".utf8) }
                        // JSON documents name their file, so that one line of many says which it is.
                        output.bytes.append(contentsOf: json ? ReportWriter.addingSource(files[index], toJSON: bytes) : bytes)
                        if output.bytes.count >= 1 << 16 { output.flush() }
                    case .failure(let error):
                        // A report that failed is a document too: its file and its error.
                        if json { ReportWriter.writeJSONFailure(source: files[index], error: error, into: &output.bytes) }
                        output.flush()
                        FileOutput.standardError("crashsym: \(error)\n")
                        output.failed = true
                    }
                }
            }
            let failed = output.withLock { output in
                output.flush()
                return output.failed
            }
            if failed { throw ExitCode.failure }
        }

        /// The first bytes of standard input: enough to tell a core file (18 bytes) or a
        /// minidump (4) from text; reading stops as soon as the bytes are neither's start, so
        /// a slow stream of lines is not held back.
        static func readHead() -> [UInt8] {
            var head: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while head.count < 18 && Symbolicator.mayStartBinaryReport(head) {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                head.append(contentsOf: chunk[0..<count])
            }
            return head
        }

        /// A core file or minidump on standard input (`crashsym symbolicate - < core`): copied
        /// to an unlinked temporary file in constant memory (`FileIO.spool`), mapped and walked
        /// like a file; returns whether it failed.
        static func symbolicateBinaryStandardInput(_ head: [UInt8], format: ReportFormat, symbolicator: Symbolicator, json: Bool,
                                                   maximumFrames: Int, render: (SymbolicatedReport) -> [UInt8]) -> Bool {
            do throws(FormatError) {
                let file = try FileIO.spool(STDIN_FILENO, prefix: head)
                let detected = file.bytes.count >= 18 ? Symbolicator.binaryFormat(of: file.bytes) : nil
                guard detected == format else {
                    throw FormatError(.badMagic, "not a \(format.rawValue) (its first bytes are not \(format == .core ? "an ELF core file's" : "\"MDMP\""))", path: "<stdin>")
                }
                let bytes = render(symbolicator.symbolicate(try symbolicator.report(binary: file, format: format, path: "-", maximumFrames: maximumFrames)))
                FileOutput.writeAll(json ? ReportWriter.addingSource("-", toJSON: bytes) : bytes, to: STDOUT_FILENO)
                return false
            } catch {
                if json {
                    var document: [UInt8] = []
                    ReportWriter.writeJSONFailure(source: "-", error: error, into: &document)
                    FileOutput.writeAll(document, to: STDOUT_FILENO)
                }
                FileOutput.standardError("crashsym: <stdin>: \(error)\n")
                return true
            }
        }

        /// Standard input read to its end as one report (JSON output: one document), after the
        /// `head` already read; returns whether it failed.
        static func symbolicateStandardInput(_ head: [UInt8], _ symbolicate: (String) throws(FormatError) -> [UInt8]) -> Bool {
            do throws(FormatError) {
                let bytes = try symbolicate(String(decoding: head, as: UTF8.self) + (try readStandardInput()))
                FileOutput.writeAll(ReportWriter.addingSource("-", toJSON: bytes), to: STDOUT_FILENO)
                return false
            } catch {
                var document: [UInt8] = []
                ReportWriter.writeJSONFailure(source: "-", error: error, into: &document)
                FileOutput.writeAll(document, to: STDOUT_FILENO)
                FileOutput.standardError("crashsym: <stdin>: \(error)\n")
                return true
            }
        }

        /// How long the input may pause before a report whose last frame came is printed.
        static let pauseMilliseconds: Int32 = 300

        /// Standard input as a stream (`adb logcat | crashsym symbolicate`): lines that are not
        /// part of a report are printed at once, each report as soon as it ends (`ReportStream`
        /// decides which lines are which). A JSON document on standard input is read to its end.
        /// Returns whether it failed (no report in the whole input).
        static func streamStandardInput(_ head: [UInt8], format: ReportFormat?, _ symbolicate: (String) throws(FormatError) -> [UInt8]) -> Bool {
            var stream = ReportStream(format: format)
            var reports = 0
            var firstFailure: FormatError?
            func emit(_ pieces: [ReportStream.Piece]) {
                for piece in pieces {
                    switch piece {
                    case .text(let text):
                        FileOutput.writeAll(Array(text.utf8), to: STDOUT_FILENO)
                    case .report(let text):
                        do throws(FormatError) {
                            FileOutput.writeAll(try symbolicate(text), to: STDOUT_FILENO)
                            reports += 1
                        } catch {
                            // Printed as it came: nothing is lost.
                            firstFailure = firstFailure ?? error
                            FileOutput.writeAll(Array(text.utf8), to: STDOUT_FILENO)
                        }
                    }
                }
            }
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var started = false
            // The head already read is the first chunk (empty: standard input was empty).
            var carried: [UInt8]? = head
            reading: while true {
                if let first = carried {
                    carried = nil
                    if first.isEmpty { break reading }
                    pending.append(contentsOf: first)
                } else {
                    var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, stream.isCollecting ? pauseMilliseconds : -1)
                    if ready < 0 && errno == EINTR { continue }
                    if ready == 0 {
                        emit(stream.pause())
                        continue
                    }
                    let count = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 {
                        firstFailure = FormatError(.io, "cannot read standard input: \(String(cString: strerror(errno)))")
                        break reading
                    }
                    if count == 0 { break reading }
                    pending.append(contentsOf: chunk[0..<count])
                }
                if !started, let first = pending.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0a && $0 != 0x0d }) {
                    started = true
                    if first == UInt8(ascii: "{") {
                        // A JSON report is one document: read it whole.
                        do throws(FormatError) {
                            let rest = try readStandardInput()
                            FileOutput.writeAll(try symbolicate(String(decoding: pending, as: UTF8.self) + rest), to: STDOUT_FILENO)
                            return false
                        } catch {
                            FileOutput.standardError("crashsym: <stdin>: \(error)\n")
                            return true
                        }
                    }
                }
                // Complete lines go to the stream; a line longer than any report line is cut.
                var lineStart = 0
                var lines: [Substring] = []
                pending.withUnsafeBufferPointer { bytes in
                    for index in bytes.indices where bytes[index] == 0x0a {
                        lines.append(Substring(String(decoding: bytes[lineStart..<index], as: UTF8.self)))
                        lineStart = index + 1
                    }
                }
                pending.removeFirst(lineStart)
                if pending.count > ReportFormat.maximumLineLength {
                    lines.append(Substring(String(decoding: pending, as: UTF8.self)))
                    pending.removeAll(keepingCapacity: true)
                }
                for line in lines { emit(stream.feed(line)) }
            }
            if !pending.isEmpty { emit(stream.feed(Substring(String(decoding: pending, as: UTF8.self)))) }
            emit(stream.finish())
            if reports == 0 {
                let reason = firstFailure.map { "\($0)" } ?? "no crash report found"
                FileOutput.standardError("crashsym: <stdin>: \(reason)\n")
                return true
            }
            return false
        }

        /// Standard output's pending bytes, and whether a report failed.
        struct Output {
            var bytes: [UInt8] = []
            var failed = false

            init() {
                bytes.reserveCapacity(1 << 17)
            }

            mutating func flush() {
                FileOutput.writeAll(bytes, to: STDOUT_FILENO)
                bytes.removeAll(keepingCapacity: true)
            }
        }

        /// The text of standard input.
        static func readStandardInput() throws(FormatError) -> String {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count < 0 { throw FormatError(.io, "cannot read standard input", path: "<stdin>") }
                if count == 0 { break }
                bytes.append(contentsOf: chunk[0..<count])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
