import ArgumentParser
import CrashsymCommandLine
import SymDemangle
import SymLookup
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym demangle`: C++, Swift and Rust names demangled, as arguments or in text.
    struct Demangle: ParsableCommand {
        static let configuration = CommandConfiguration(
            _superCommandName: "crashsym",  // for `Crashsym.quickParse`, which says why
            abstract: "Demangle C++, Swift and Rust names given as arguments, or every mangled name in standard input.",
            discussion: """
                With names as arguments, prints each demangled (or as given when it is not a mangled name), one per \
                line. Without, reads standard input and prints it with every mangled name replaced in place, each line \
                as soon as it is read, like c++filt, swift-demangle and rustfilt (one filter for all three). With \
                --format json, each argument or input line is one name, printed as {"mangled", "demangled" (null \
                when it is not a name this tool demangles), "language" (c++, swift, rust or null)}.

                Examples:
                  crashsym demangle _ZN3foo3barEv '$s4main5MatrixV2atyS2i_SitF'
                  perf report --stdio | crashsym demangle
                  crashsym demangle --format json < names.txt
                """
        )

        @Argument(help: ArgumentHelp("Mangled names. Standard input is read when none are given.", valueName: "name"))
        var names: [String] = []

        @Option(help: "Output format: text (names or the input text, demangled in place) or json (one object per name).")
        var format: DemangleStream.Format = .text

        @OptionGroup var naming: NameOptions

        func run() throws {
            let stream = DemangleStream(demangler: naming.demangler, format: format)
            if names.isEmpty {
                guard stream.run(input: STDIN_FILENO, output: STDOUT_FILENO) else { throw ExitCode.failure }
            } else {
                let output = stream.output(forNames: names)
                guard DemangleStream.writeAll(output, to: STDOUT_FILENO) else { throw ExitCode.failure }
            }
            // Names left mangled by a limit (not by being no name) are said once, not per name.
            if let summary = DemangleRefusals.summary() {
                _ = DemangleStream.writeAll(Array("crashsym demangle: \(summary)\n".utf8), to: STDERR_FILENO)
            }
        }
    }
}

extension DemangleStream.Format: ExpressibleByArgument {}
