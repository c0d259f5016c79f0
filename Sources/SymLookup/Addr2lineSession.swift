import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// One run of the addr2line drop-in: addresses (the arguments, else standard input, each answer
/// written before the next line is read) answered by one module's renderer.
public enum Addr2lineSession {
    /// Answers `addresses`, or with none the lines of standard input, with `renderer`; `section`
    /// (`-j`) makes each address an offset into that section (address and size). `file` is the
    /// module as named, for messages. Returns false when some address could not be answered.
    public static func run(_ renderer: consuming Addr2lineRenderer, file: String, section: (address: UInt64, size: UInt64)?,
                           addresses: [String]) -> Bool {
        var renderer = renderer
        let printsAddresses = renderer.options.addresses
        var output: [UInt8] = []
        output.reserveCapacity(1 << 16)
        var failed = false
        func answer(_ line: UnsafeRawBufferPointer) {
            do {
                let given = renderer.address(of: line)
                guard let section else {
                    try renderer.render(given, into: &output)
                    return
                }
                let start = output.count
                // Outside the section: an address nothing covers (binutils answers ?? too).
                let address = given < section.size ? section.address &+ given : UInt64.max
                try renderer.render(address, into: &output)
                if printsAddresses { Self.replaceLeadingAddress(with: given, inAnswerAt: start, of: &output) }
            } catch {
                StandardError.write("crashsym addr2line: \(file): \(error)\n")
                failed = true
            }
        }
        if addresses.isEmpty {
            InputLines.forEachLine(of: STDIN_FILENO, answer) {
                _ = output.withUnsafeBytes { FileIO.writeAll(STDOUT_FILENO, $0) }
                output.removeAll(keepingCapacity: true)
            }
        } else {
            for address in addresses {
                var copy = address
                copy.withUTF8 { answer(UnsafeRawBufferPointer($0)) }
            }
        }
        _ = output.withUnsafeBytes { FileIO.writeAll(STDOUT_FILENO, $0) }
        return !failed
    }

    /// The `-a` line of the answer at `output[start...]` (`0x` and zero-padded hex digits)
    /// naming `address`, in the same width: with `-j`, binutils prints the offset as given.
    static func replaceLeadingAddress(with address: UInt64, inAnswerAt start: Int, of output: inout [UInt8]) {
        guard output.count >= start + 2, output[start] == UInt8(ascii: "0"), output[start + 1] == UInt8(ascii: "x") else { return }
        var end = start + 2
        while end < output.count, (0x30...0x39).contains(output[end]) || (0x61...0x66).contains(output[end]) { end += 1 }
        let digits = String(address, radix: 16)
        let width = end - start - 2
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        output.replaceSubrange((start + 2)..<end, with: Array(padded.utf8))
    }
}
