import ArgumentParser
import CrashsymCommandLine
import SymBytes
import SymLookup
import Symbolication

extension Crashsym {
    /// `crashsym lookup`: addresses to functions, file:line and inlined frames.
    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            _superCommandName: "crashsym",  // for `Crashsym.quickParse`, which says why
            abstract: "Resolve addresses in a .csym table or an ELF file to functions, file:line and inlined frames.",
            discussion: """
                Addresses are module file virtual addresses in hex (0x optional), given as arguments or one per \
                line on standard input. Frames are printed innermost first; the physical function comes last. \
                An ELF file is converted on the fly (its separate debug file is looked up like `dump` does), and the \
                conversion kept in the table cache that `symbolicate` and `addr2line` share (`--no-cache`: not).

                Examples:
                  crashsym lookup symbols/5f0e….csym 0x4be844 0x4be900
                  crashsym lookup ./app --format json < addresses.txt
                  crashsym lookup ./app --no-demangle < addresses.txt
                """
        )

        @Argument(help: ArgumentHelp("A .csym table or an ELF file.", valueName: "table-or-elf"))
        var path: String

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addresses: [String] = []

        @Option(help: "Output format: text, or json (one object per address, one per line, in input order).")
        var format: OutputFormat = .text

        @Flag(name: .customLong("no-demangle"), help: "Print function names as stored (mangled), like llvm-symbolizer --no-demangle.")
        var noDemangle = false

        @Option(name: .shortAndLong, help: ArgumentHelp(
            "Threads answering large batches of addresses from standard input (default: number of cores, at most \(AddressLookup.defaultMaximumJobs)).",
            valueName: "n"))
        var jobs: Int?

        @Flag(name: .customLong("no-cache"), help: "Neither read nor write the table cache ($CRASHSYM_CACHE_DIR, else $XDG_CACHE_HOME/crashsym, else ~/.cache/crashsym).")
        var noCache = false

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
            for address in addresses where AddressLookup.parse(address) == nil {
                throw ValidationError("not a hex address: '\(InputPreview.quote(address))'")
            }
        }

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder,
                                            cache: noCache ? nil : TableCache.standard)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            var options = AddressLookup.Options(style: format == .json ? .json : .text, demangles: !noDemangle)
            if let jobs { options.jobs = jobs }
            guard AddressLookup.run(table: symbols.table, path: path, addresses: addresses, options: options) else {
                throw ExitCode.failure
            }
        }
    }
}
