import Foundation
@testable import SymLookup
import Testing
import TestSupport

/// The front ends' own pieces, in process: llvm-symbolizer's input-line parser on hostile input,
/// the line reader's limits, and the address rewriting of addr2line's `-j`. (Their output as a
/// whole is tested through the built binary, byte for byte against the peers, in CrashsymTests.)
@Suite struct SymLookupTests {
    /// `StringRef::getAsInteger` with radix 0, as llvm-symbolizer reads offsets.
    @Test(arguments: [("0x10", UInt64?.some(16)), ("0X1f", 31), ("010", 8), ("0b101", 5), ("0o17", 15), ("42", 42),
                      ("0", 0), ("0x", nil), ("08", nil), ("0b2", nil), ("12a", nil), ("", nil),
                      ("18446744073709551615", UInt64.max), ("18446744073709551616", nil), ("0x10000000000000000", nil)])
    func offsetsAreReadAsLLVMReadsThem(text: String, expected: UInt64?) {
        var copy = text
        #expect(copy.withUTF8 { SymbolizerRequest.parseInteger(UnsafeRawBufferPointer($0)) } == expected)
    }

    @Test func requestLinesAreParsed() throws {
        var parser = SymbolizerLineParser(object: nil)
        func parse(_ line: String) -> Result<SymbolizerRequest, SymbolizerRequest.Problem>? {
            var copy = line
            return copy.withUTF8 { parser.parse(UnsafeRawBufferPointer($0)) }
        }
        let code = try #require(try parse("CODE /bin/app 0x10")?.get())
        #expect(code.kind == .code && code.path == "/bin/app" && code.address == 0x10)
        let data = try #require(try parse("DATA \"/a b/lib.so\" 16")?.get())
        #expect(data.kind == .data && data.path == "/a b/lib.so" && data.address == 16)
        #expect(parse("") == nil, "an empty line is answered unknown, without an error")
    }

    /// Hostile lines (random bytes, every truncation of valid lines, a megabyte of digits) give a
    /// request, a problem or nothing: never a trap, never a hang.
    @Test func hostileLinesNeverTrap() {
        var random = SplitMix64(seed: 14)
        var parser = SymbolizerLineParser(object: "/bin/app")
        let valid = ["CODE /bin/app 0x10", "DATA \"/x y\" 0b11", "FRAME /bin/app:x86_64 077", "/bin/app 0x1", "0x20",
                     "CODE \"unterminated 0x1", "CODE /bin/app main+4"]
        var lines: [[UInt8]] = valid.flatMap { line in (0...line.utf8.count).map { Array(line.utf8.prefix($0)) } }
        for _ in 0..<2_000 { lines.append((0..<random.int(0...64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }) }
        lines.append(Array("CODE /bin/app 0x".utf8) + [UInt8](repeating: UInt8(ascii: "f"), count: 1 << 20))
        for line in lines {
            _ = line.withUnsafeBytes { parser.parse($0) }
        }
        var check = SymbolizerLineParser(object: nil)
        let overflow = Array("CODE /bin/app 0x".utf8) + [UInt8](repeating: UInt8(ascii: "f"), count: 17)
        if case .success(let request)? = overflow.withUnsafeBytes({ check.parse($0) }), let address = request.address {
            Issue.record("an offset past 64 bits was read as 0x\(String(address, radix: 16))")
        }
    }

    /// `-a` with `-j`: the printed address is the offset as given, in the same width.
    @Test func theLeadingAddressIsRewrittenInItsWidth() {
        var output = Array("prior\n0x0000000000401000\nmain\n".utf8)
        Addr2lineSession.replaceLeadingAddress(with: 0x10, inAnswerAt: 6, of: &output)
        #expect(String(decoding: output, as: UTF8.self) == "prior\n0x0000000000000010\nmain\n")
        var narrow = Array("0x00401000\n".utf8)
        Addr2lineSession.replaceLeadingAddress(with: 0x1234_5678_9, inAnswerAt: 0, of: &narrow)
        #expect(String(decoding: narrow, as: UTF8.self) == "0x123456789\n", "wider than the field: printed whole")
        var none = Array("??\n".utf8)
        Addr2lineSession.replaceLeadingAddress(with: 1, inAnswerAt: 0, of: &none)
        #expect(none == Array("??\n".utf8), "no address line: unchanged")
    }

    /// Lines from a pipe: each complete line once, in order, the last one without a newline too;
    /// a line longer than the limit is handed over in pieces instead of growing without bound.
    @Test func linesAreReadWholeAndBounded() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: InputLines.maximumLineLength * 2 + 10)
        let input = Array("one\ntwo\n".utf8) + long + Array("\nlast".utf8)
        let writer = descriptors[1]
        let thread = Thread {
            _ = input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(writer, bytes.baseAddress! + offset, bytes.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writer)
        }
        thread.start()
        var lines: [[UInt8]] = []
        InputLines.forEachLine(of: descriptors[0], { lines.append(Array($0)) }, afterChunk: {})
        close(descriptors[0])
        #expect(lines.first == Array("one".utf8) && lines.dropFirst().first == Array("two".utf8))
        #expect(lines.last == Array("last".utf8))
        let middle = lines.dropFirst(2).dropLast()
        #expect(middle.reduce(0) { $0 + $1.count } == long.count, "every byte of the long line handed over")
        #expect(middle.allSatisfy { $0.count <= InputLines.maximumLineLength + (1 << 16) && !$0.contains(0x0a) })
    }
}
