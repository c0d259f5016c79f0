import ArgumentParser
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym lookup`: addresses to functions, file:line and inlined frames.
    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resolve addresses in a .csym table or an ELF file to functions, file:line and inlined frames.",
            discussion: """
                Addresses are module file virtual addresses in hex (0x optional), given as arguments or one per
                line on standard input. Frames are printed innermost first; the physical function comes last.
                An ELF file is converted on the fly (its separate debug file is looked up like `dump` does).

                Examples:
                  crashsym lookup symbols/5f0e….csym 0x4be844 0x4be900
                  crashsym lookup ./app --format json < addresses.txt
                """
        )

        @Argument(help: ArgumentHelp("A .csym table or an ELF file.", valueName: "table-or-elf"))
        var path: String

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addresses: [String] = []

        @Option(help: "Output format: text, or json (one object per address, one per line, in input order).")
        var format: OutputFormat = .text

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            for address in addresses where LookupOutput.parseAddress(address) == nil {
                throw ValidationError("not a hex address: '\(address)'")
            }
        }

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            var failed = false
            var output = OutputBuffer()
            func answer(_ text: String) {
                guard let address = LookupOutput.parseAddress(text) else {
                    output.flush()
                    FileOutput.standardError("crashsym: not a hex address: '\(text)'\n")
                    failed = true
                    return
                }
                do {
                    let frames = try symbols.frames(at: address)
                    output.write(format == .json
                        ? LookupOutput.json(address: address, frames: frames) + "\n"
                        : LookupOutput.text(address: address, frames: frames))
                } catch {
                    output.flush()
                    FileOutput.standardError("crashsym: \(path): \(error)\n")
                    failed = true
                }
            }
            if addresses.isEmpty {
                var status = stat()
                let inputIsRegularFile = fstat(STDIN_FILENO, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
                while let line = readLine() {
                    if line.trimmingCharacters(in: " \t\r").isEmpty { continue }
                    answer(line)
                    // Answer each line at once unless reading a file: a partner on a pipe or a
                    // terminal may wait for the answer before it writes the next address.
                    if !inputIsRegularFile { output.flush() }
                }
            } else {
                for address in addresses { answer(address) }
            }
            output.flush()
            if failed { throw ExitCode.failure }
        }
    }
}

extension String {
    /// The string without leading and trailing characters from `set`.
    func trimmingCharacters(in set: String) -> Substring {
        let characters = Set(set)
        guard let first = firstIndex(where: { !characters.contains($0) }) else { return self[endIndex...] }
        let last = lastIndex(where: { !characters.contains($0) })!
        return self[first...last]
    }
}
