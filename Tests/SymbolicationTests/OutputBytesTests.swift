import TestSupport
import Testing
@testable import Symbolication

/// `OutputBytes`: integer formatting against the standard library's, growth past any capacity.
@Suite struct OutputBytesTests {
    @Test func hexAndDecimalMatchTheStandardLibrary() {
        var generator = SplitMix64(seed: 5)
        var values: [UInt64] = [0, 1, 9, 10, 15, 16, 99, 100, 0xffff_ffff, UInt64.max, UInt64.max - 1]
        for _ in 0..<2000 { values.append(generator.next() >> (generator.next() % 64)) }
        for value in values {
            var output = OutputBytes(capacity: 1)
            output.appendHex(value)
            output.append(UInt8(ascii: " "))
            output.appendDecimal(value)
            #expect(String(decoding: output.bytes, as: UTF8.self) == String(value, radix: 16) + " " + String(value))
        }
    }

    /// Every length through the short-copy paths (0-16 bytes) and past them, at every offset
    /// of the source and of the buffer, copies exactly those bytes.
    @Test func appendsOfEveryShortLengthCopyExactly() {
        let source = (0..<64).map { UInt8(0x41 + $0 % 26) }
        for prefix in 0..<9 {
            for start in 0..<8 {
                for length in 0...24 {
                    var output = OutputBytes(capacity: 1)
                    output.append(Array(repeating: UInt8(ascii: "."), count: prefix))
                    source.withUnsafeBytes { output.append(UnsafeRawBufferPointer(rebasing: $0[start..<(start + length)])) }
                    output.append(UInt8(ascii: "|"))
                    let expected = Array(repeating: UInt8(ascii: "."), count: prefix) + source[start..<(start + length)] + [UInt8(ascii: "|")]
                    #expect(Array(output.bytes) == expected, "prefix \(prefix) start \(start) length \(length)")
                }
            }
        }
    }

    @Test func growsAndKeepsEverythingAppended() {
        var output = OutputBytes(capacity: 1)
        var expected: [UInt8] = []
        var generator = SplitMix64(seed: 9)
        for round in 0..<500 {
            let chunk = (0..<Int(generator.next() % 300)).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            output.append(chunk)
            expected += chunk
            output.append("|" as StaticString)
            expected.append(UInt8(ascii: "|"))
        }
        #expect(Array(output.bytes) == expected)
        #expect(Array(output.bytes(3..<10)) == Array(expected[3..<10]))
        output.removeAll()
        #expect(output.count == 0)
    }
}
