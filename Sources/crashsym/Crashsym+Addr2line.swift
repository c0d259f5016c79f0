import ArgumentParser
import CrashsymCommandLine
import SymLookup
import Symbolication

extension Crashsym {
    /// `crashsym addr2line` (or crashsym run through a link named `addr2line`): GNU binutils
    /// addr2line's options and output, from crashsym's tables.
    struct Addr2line: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "addr2line",
            abstract: "Translate addresses to file:line like GNU addr2line (same options, same output).",
            discussion: """
                Addresses are hex module file addresses (0x optional), from the arguments or one per line on \
                standard input; each gets one answer, written before the next line is read. Unknown addresses \
                print ??:0 (and ?? for the function); line 0 prints ?. FILE is an ELF file (converted on the fly, \
                its separate debug file found like `dump` does; with a build-id and DWARF, its table is kept in \
                symbolicate's cache for later processes) or a .csym table. Discriminators are not printed: the \
                tables do not keep them. -j SECTION takes addresses as offsets into that section of the ELF file; \
                -b (an ELF BFD name), -r and -R are accepted as binutils accepts them.

                Examples:
                  crashsym addr2line -e app -f -i -C 0x4be844
                  crashsym addr2line -e symbols/5f0e….csym -a -p -s < addresses.txt
                """
        )

        @Option(name: [.customShort("e"), .customLong("exe")],
                help: ArgumentHelp("The ELF file or .csym table (default a.out).", valueName: "file"))
        var file = "a.out"

        @Flag(name: [.customShort("f"), .customLong("functions")], help: "Print function names.")
        var functions = false

        @Flag(name: [.customShort("i"), .customLong("inlines")], help: "Print the frames an address is inlined into.")
        var inlines = false

        @Flag(name: [.customShort("C"), .customLong("demangle")], help: "Demangle function names (C++, Rust).")
        var demangle = false

        @Flag(name: [.customShort("a"), .customLong("addresses")], help: "Print each address (0x%016x) first.")
        var addresses = false

        @Flag(name: [.customShort("p"), .customLong("pretty-print")], help: "One line per address: func at file:line.")
        var pretty = false

        @Flag(name: [.customShort("s"), .customLong("basenames")], help: "File names without directories.")
        var basenames = false

        @Option(name: [.customShort("j"), .customLong("section")],
                help: ArgumentHelp("Addresses are offsets into this section of the ELF file (not of a .csym table, which keeps no sections).", valueName: "name"))
        var section: String?

        @Option(name: [.customShort("b"), .customLong("target")],
                help: ArgumentHelp("The object format (an ELF BFD name such as elf64-x86-64; the format is read from the file).", valueName: "bfdname"))
        var target: String?

        @Flag(name: [.customShort("r"), .customLong("no-recurse-limit")], help: "Accepted: the demanglers have no recursion limit to lift.")
        var noRecurseLimit = false

        @Flag(name: [.customShort("R"), .customLong("recurse-limit")], help: "Accepted: the demanglers bound their own recursion.")
        var recurseLimit = false

        @Flag(name: [.customShort("v"), .customLong("version")], help: "Print the version and exit.")
        var version = false

        @OptionGroup var debug: DebugOptions

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addressList: [String] = []

        func run() throws {
            if version {
                FileOutput.standardOutput("crashsym addr2line \(CrashsymVersion.current) (GNU addr2line's options and output)\n")
                return
            }
            // binutils refuses a BFD name it does not know; every ELF one reads ELF files here.
            if let target, target != "default", !target.hasPrefix("elf") {
                FileOutput.standardError("crashsym addr2line: \(file): invalid bfd target\n")
                throw ExitCode.failure
            }
            let cache = ModuleCache(locator: debug.locator, decoder: debug.decoder)
            let module: CachedModule
            switch cache.module(at: file) {
            case .success(let opened): module = opened
            case .failure(let error):
                FileOutput.standardError("crashsym addr2line: \(error)\n")
                throw ExitCode.failure
            }
            // `-j`: addresses are offsets into the section; past its size they find nothing.
            var sectionRange: (address: UInt64, size: UInt64)?
            if let section {
                guard let binary = module.binary else {
                    FileOutput.standardError("crashsym addr2line: \(file): -j needs the ELF file: a .csym table keeps no sections\n")
                    throw ExitCode.failure
                }
                guard let found = binary.section(named: section) else {
                    FileOutput.standardError("crashsym addr2line: \(file): cannot find section \(section)\n")
                    throw ExitCode.failure
                }
                sectionRange = (found.address, found.size)
            }
            var switches = Addr2lineRenderer.Options()
            switches.functions = functions
            switches.inlines = inlines
            switches.demangle = demangle
            switches.addresses = addresses
            switches.pretty = pretty
            switches.basenames = basenames
            let renderer = Addr2lineRenderer(module: module, options: switches)
            guard Addr2lineSession.run(renderer, file: file, section: sectionRange, addresses: addressList) else {
                throw ExitCode.failure
            }
        }
    }
}
