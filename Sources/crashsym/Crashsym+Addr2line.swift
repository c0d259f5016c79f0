import ArgumentParser
import CrashsymCommandLine
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

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
                tables do not keep them.

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

        @OptionGroup var debug: DebugOptions

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addressList: [String] = []

        func run() throws {
            let cache = ModuleCache(locator: debug.locator, decoder: debug.decoder)
            let module: CachedModule
            switch cache.module(at: file) {
            case .success(let opened): module = opened
            case .failure(let error):
                FileOutput.standardError("crashsym addr2line: \(error)\n")
                throw ExitCode.failure
            }
            var switches = Addr2lineRenderer.Options()
            switches.functions = functions
            switches.inlines = inlines
            switches.demangle = demangle
            switches.addresses = addresses
            switches.pretty = pretty
            switches.basenames = basenames
            var renderer = Addr2lineRenderer(module: module, options: switches)
            var output: [UInt8] = []
            output.reserveCapacity(1 << 16)
            var failed = false
            func answer(_ line: UnsafeRawBufferPointer) {
                do {
                    try renderer.render(renderer.address(of: line), into: &output)
                } catch {
                    FileOutput.standardError("crashsym addr2line: \(file): \(error)\n")
                    failed = true
                }
            }
            if addressList.isEmpty {
                InputLines.forEachLine(of: STDIN_FILENO, answer) {
                    FileOutput.writeAll(output, to: STDOUT_FILENO)
                    output.removeAll(keepingCapacity: true)
                }
            } else {
                for address in addressList {
                    var copy = address
                    copy.withUTF8 { answer(UnsafeRawBufferPointer($0)) }
                }
            }
            FileOutput.writeAll(output, to: STDOUT_FILENO)
            if failed { throw ExitCode.failure }
        }
    }
}
