import TestSupport
import Foundation
import Testing
@testable import SymReport

/// The parser's and writer's fast paths against their plain definitions.
@Suite struct FastPathTests {
    /// The escaping check, eight bytes at a time, agrees with a byte-by-byte reading for every
    /// position of every byte that needs escaping, and for random text.
    @Test func escapingCheckAgreesWithTheByteByByteRule() {
        func naive(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c } }
        func fast(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer { JSONText.needsEscaping($0) } }
        var checked = 0
        var mismatches: [[UInt8]] = []
        for length in 0..<24 {
            let clean = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(!fast(clean))
            for position in 0..<length {
                // Every byte value at every position, around neighbours that borrow (0x00, 0x80, 0xff).
                for value in UInt8.min...UInt8.max {
                    for neighbour: UInt8 in [UInt8(ascii: "a"), 0x21, 0x80, 0xff] {
                        var bytes = [UInt8](repeating: neighbour, count: length)
                        bytes[position] = value
                        if fast(bytes) != naive(bytes) { mismatches.append(bytes) }
                        checked += 1
                    }
                }
            }
        }
        var random = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &random)).map { _ in UInt8.random(in: 0x1c...0xff, using: &random) }
            if fast(bytes) != naive(bytes) { mismatches.append(bytes) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(checked > 100_000)
    }

    /// Frames naming the same module path with and without a build-id, with another build-id,
    /// and in another case of hex digits: the module list is what `moduleIndex` alone gives.
    @Test func repeatedModulesOnFrameLinesResolveLikeTheModuleIndex() throws {
        let id = "5f0e4b0c3d2a19887766554433221100aabbccdd"
        let frames = [
            "    #0 0x55d0c2a1b2c4  (/app/prog+0x1b2c4)",
            "    #1 0x55d0c2a1b2c8  (/app/prog+0x1b2c8) (BuildId: \(id.uppercased()))",
            "    #2 0x7f0000001000  (/lib/libc.so.6+0x1000) (BuildId: 00112233)",
            "    #3 0x55d0c2a1b2cc  (/app/prog+0x1b2cc) (BuildId: \(id))",
            "    #4 0x7f0000002000  (/lib/libc.so.6+0x2000) (BuildId: 44556677)",
            "    #5 0x55d0c2a1b2d0  (/app/prog+0x1b2d0)",
            "    #6 0x7f0000003000  (/lib/libc.so.6+0x3000) (BuildId: 0011zz33)",
        ]
        let report = try CrashReport.parse("==1==ERROR: AddressSanitizer: SEGV on unknown address\n" + frames.joined(separator: "\n") + "\n")
        #expect(report.modules.map(\.path) == ["/app/prog", "/lib/libc.so.6"])
        // The first build-id printed for a path fills it; later ones do not replace it.
        #expect(report.modules.map(\.buildID) == [id, "00112233"])
        #expect(report.stacks[0].frames.map(\.module) == [0, 0, 1, 0, 1, 0, 1])
        #expect(report.stacks[0].frames.map(\.moduleOffset) == [0x1b2c4, 0x1b2c8, 0x1000, 0x1b2cc, 0x2000, 0x1b2d0, 0x3000])
        // More modules than the memo keeps: each still gets its own entry.
        let many = (0..<100).map { "    #\($0) 0x\(String(0x1000 + $0, radix: 16))  (/lib/m\($0 % 50).so+0x10) (BuildId: \(String(format: "%08x", $0 % 50)))" }
        let wide = try CrashReport.parse("==1==ERROR: AddressSanitizer: SEGV on unknown address\n" + many.joined(separator: "\n") + "\n")
        #expect(wide.modules.count == 50)
        #expect(wide.stacks[0].frames.map(\.module) == (0..<100).map { $0 % 50 })
        #expect(wide.modules.map(\.buildID) == (0..<50).map { String(format: "%08x", $0) })
    }
}
