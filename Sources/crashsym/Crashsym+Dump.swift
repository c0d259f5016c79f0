#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Symbolication
import SymBytes
import CrashsymCommandLine

extension Crashsym {
    /// `crashsym dump`: ELF files to `.csym` symbol tables.
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert ELF binaries and debug files into .csym symbol tables named by build-id.",
            discussion: """
                Every ELF file found under the given paths (recursively for directories) is converted to \
                <outdir>/<build-id>.csym. Non-ELF files inside directories are skipped quietly; broken ELF \
                files are reported and make the exit status 1. A stripped binary and its separate debug file \
                (found with --debug-dir, next to the binary through .gnu_debuglink, or among the inputs by \
                build-id) become one table. Swift names are demangled here, once, by the Swift runtime, and \
                stored in the table beside the mangled ones, so that lookups need not demangle them.

                Example:
                  crashsym dump build/out -o symbols/
                  crashsym dump app --debug-dir build/debug -o symbols/ --format json
                  crashsym dump app -o breakpad-symbols/ --format breakpad

                With --format breakpad, each module becomes a Breakpad symbol file (MODULE, INFO CODE_ID, \
                FILE, INLINE_ORIGIN, FUNC with line and INLINE records, PUBLIC, STACK CFI from .eh_frame and \
                .debug_frame) at <outdir>/<name>/<module id>/<name>.sym, the layout of a Breakpad symbol store; \
                the listing is printed as text.
                """
        )

        @Argument(help: ArgumentHelp("ELF files or directories to convert.", valueName: "file-or-dir"))
        var paths: [String]

        @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Output directory.", valueName: "outdir"))
        var output: String

        @Option(help: "Output format: text (one line per module), json (one object per line; a file that failed is {\"path\", \"error\": {\"code\", \"message\"}}), or breakpad (write Breakpad .sym files instead of .csym tables).")
        var format: DumpFormat = .text

        @Option(name: .shortAndLong, help: "Files converted in parallel (default: number of cores).")
        var jobs: Int?

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        }

        func run() throws {
            HeapTuning.fixMmapThreshold()
            var configuration = DumpConfiguration(outputDirectory: output, locator: debug.locator, decoder: debug.decoder)
            if let jobs { configuration.jobs = jobs }
            if format == .breakpad { return try runBreakpad(configuration) }
            let (files, _) = Dumper.findELFFiles(paths)
            let bar = ProgressBar(total: files.count, label: "dump")
            let report: DumpReport
            do {
                report = try Dumper(configuration: configuration).run(paths: paths) { done, _ in bar.update(done) }
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            for module in report.modules {
                FileOutput.standardOutput(format == .json ? Self.json(module) + "\n" : Self.text(module) + "\n")
            }
            for failure in report.failures {
                // JSON output has a line for each failed file too, so that none goes unnoticed.
                if format == .json { FileOutput.standardOutput(Self.json(failure) + "\n") }
                FileOutput.standardError("crashsym: \(failure.error)\n")
            }
            if report.modules.isEmpty && report.failures.isEmpty {
                FileOutput.standardError("crashsym: no ELF files found\n")
                throw ExitCode.failure
            }
            if !report.failures.isEmpty { throw ExitCode.failure }
        }

        /// `--format breakpad`: Breakpad `.sym` files instead of tables.
        func runBreakpad(_ configuration: DumpConfiguration) throws {
            let result: (modules: [BreakpadModule], failures: [DumpFailure])
            do {
                result = try BreakpadDumper.run(paths: paths, configuration: configuration)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            for module in result.modules {
                let name = module.path.split(separator: "/").last.map(String.init) ?? module.path
                FileOutput.standardOutput("\(module.buildID)  \(module.architecture)  \(name)  \(module.moduleID)  \(module.outputPath)\n")
            }
            for failure in result.failures { FileOutput.standardError("crashsym: \(failure.error)\n") }
            if result.modules.isEmpty && result.failures.isEmpty {
                FileOutput.standardError("crashsym: no ELF files found\n")
                throw ExitCode.failure
            }
            if !result.failures.isEmpty { throw ExitCode.failure }
        }

        static func text(_ module: DumpedModule) -> String {
            let stats = module.statistics
            let name = module.path.split(separator: "/").last.map(String.init) ?? module.path
            return "\(module.buildID)  \(module.architecture)  \(name)  functions=\(stats.functions)"
                + " lines=\(stats.lineRows) inlines=\(stats.inlinedScopes) size=\(stats.byteCount)"
                + (module.hasDWARF ? "" : "  (symbol table only)")
        }

        /// `{"path": …, "error": {"code": …, "message": …}}` for a file that was not converted.
        static func json(_ failure: DumpFailure) -> String {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("path", failure.path)
            writer.beginObject("error")
            writer.field("code", failure.error.code.rawValue)
            writer.field("message", failure.error.message)
            writer.endObject()
            writer.endObject()
            return writer.text
        }

        static func json(_ module: DumpedModule) -> String {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("build_id", module.buildID)
            writer.field("arch", module.architecture)
            writer.field("name", module.path.split(separator: "/").last.map(String.init) ?? module.path)
            writer.field("path", module.path)
            if let debugFile = module.debugFilePath { writer.field("debug_file", debugFile) } else { writer.fieldNull("debug_file") }
            writer.field("output", module.outputPath)
            writer.field("dwarf", module.hasDWARF)
            writer.field("functions", module.statistics.functions)
            writer.field("line_rows", module.statistics.lineRows)
            writer.field("inlines", module.statistics.inlinedScopes)
            writer.field("symbols", module.statistics.symbols)
            writer.field("size", module.statistics.byteCount)
            writer.endObject()
            return writer.text
        }
    }
}

/// `dump --format`: the listing's format, or Breakpad symbol files instead of tables.
enum DumpFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json, breakpad
}
