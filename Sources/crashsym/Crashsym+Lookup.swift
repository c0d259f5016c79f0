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
            for address in addresses where Self.parse(address) == nil {
                throw ValidationError("not a hex address: '\(address)'")
            }
        }

        static func parse(_ text: String) -> UInt64? {
            var copy = text
            return copy.withUTF8 { FrameRenderer.parseAddress(UnsafeRawBufferPointer($0)) }
        }

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            var renderer = FrameRenderer(table: symbols.table, style: format == .json ? .json : .text)
            var output: [UInt8] = []
            output.reserveCapacity(1 << 17)
            var failed = false
            func answer(_ line: UnsafeRawBufferPointer) {
                guard let address = FrameRenderer.parseAddress(line) else {
                    if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) { return }
                    FileOutput.writeAll(output, to: STDOUT_FILENO)
                    output.removeAll(keepingCapacity: true)
                    FileOutput.standardError("crashsym: not a hex address: '\(String(decoding: line, as: UTF8.self))'\n")
                    failed = true
                    return
                }
                do {
                    try renderer.render(address, into: &output)
                } catch {
                    FileOutput.standardError("crashsym: \(path): \(error)\n")
                    failed = true
                }
                if output.count >= 1 << 16 {
                    FileOutput.writeAll(output, to: STDOUT_FILENO)
                    output.removeAll(keepingCapacity: true)
                }
            }
            if addresses.isEmpty {
                // Read standard input in chunks and answer every complete line of each chunk before
                // the next read, so a partner on a pipe gets its answer without waiting for more input.
                var pending: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    pending.append(contentsOf: chunk[0..<count])
                    var lineStart = 0
                    pending.withUnsafeBytes { bytes in
                        var index = 0
                        while index < bytes.count {
                            if bytes[index] == 0x0a {
                                answer(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index]))
                                lineStart = index + 1
                            }
                            index += 1
                        }
                    }
                    pending.removeFirst(lineStart)
                    FileOutput.writeAll(output, to: STDOUT_FILENO)
                    output.removeAll(keepingCapacity: true)
                }
                if !pending.isEmpty { pending.withUnsafeBytes { answer($0) } }
            } else {
                for address in addresses {
                    var copy = address
                    copy.withUTF8 { answer(UnsafeRawBufferPointer($0)) }
                }
            }
            FileOutput.writeAll(output, to: STDOUT_FILENO)
            if failed { throw ExitCode.failure }
        }
    }
}
