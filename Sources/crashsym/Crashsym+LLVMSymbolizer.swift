import ArgumentParser
import CrashsymCommandLine
import SymLookup

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
            return SymbolizerSession.run(options: options, programName: programName)
        }
    }
}
