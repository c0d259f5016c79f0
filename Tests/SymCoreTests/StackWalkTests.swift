import Foundation
import SymBytes
import SymCore
import SymELF
import SymUnwind
import Symbolication
import Testing

/// The x86_64 walker over the real minidump, against what Breakpad's processor reported
/// (the README of ../shared/reference/minidump-linux).
@Suite struct StackWalkTests {
    static func dump() throws -> Minidump {
        try Minidump(file: MappedFile(path: MinidumpTests.directory + "/crash_linux.dmp"))
    }

    @Test("With crash_linux's CFI: 5 frames, frame 1 by CFI at 0x402079 with Breakpad's registers")
    func withCFI() throws {
        let dump = try Self.dump()
        let binary = try ELFFile(path: MinidumpTests.directory + "/crash_linux")
        let cfi = try CallFrameInfo.read(binary: binary)
        let thread = try #require(dump.crashedThread)
        let frames = try dump.walk(thread) { module in
            module.codeID == binary.buildID ? (cfi, BreakpadWriter.loadAddress(of: binary)) : nil
        }
        #expect(frames.count == 5, "\(frames.map { "0x\(String($0.pc, radix: 16)) \($0.trust)" })")
        #expect(frames.first?.trust == .context)
        let frame = try #require(frames.dropFirst().first)
        #expect(frame.trust == .cfi)
        #expect(frame.lookupAddress == 4_202_617)
        #expect(frame.pc == 4_202_618)
        let expected: [UInt16: UInt64] = [16: 0x40207a, 7: 0x7ffe_a597_9b28, 15: 0, 14: 0, 3: 0,
                                          13: 0x7ffe_a597_9dc0, 12: 0x401f10, 6: 0x7ffe_a597_9ce0]
        #expect(frame.registers == expected)
        #expect(frames.dropFirst().allSatisfy { $0.trust == .cfi || $0.trust == .framePointer || $0.trust == .scan })
    }

    @Test("Without CFI, scanning only (as Breakpad's processor walked it): frame 1 and 16 frames")
    func withoutCFI() throws {
        let dump = try Self.dump()
        let thread = try #require(dump.crashedThread)
        let frames = try dump.walk(thread, methods: [.scan]) { _ in nil }
        let frame = try #require(frames.dropFirst().first)
        #expect(frame.trust == .scan)
        #expect(frame.lookupAddress == 4_202_617)
        #expect(frame.registers[16] == 0x40207a)
        #expect(frame.registers[7] == 0x7ffe_a597_9b28)
        #expect(frame.registers[6] == 0x7ffe_a597_9ce0)
        // Every frame after the first is a scanned one, each above its callee.
        #expect(frames.dropFirst().allSatisfy { $0.trust == .scan })
        for (callee, caller) in zip(frames, frames.dropFirst()) { #expect(caller.registers[7]! > callee.registers[7]!) }
        // Breakpad found 16 frames this way; this walk finds at least those (18 today: two more
        // candidates accepted further up the stack; which Breakpad rejects is not yet known —
        // see the note on issue 15).
        #expect(frames.count >= 16, "\(frames.map { "0x\(String($0.pc, radix: 16)) \($0.trust)" })")
    }

    @Test("Without CFI, with the frame-pointer step: frame 1 is still the scan's (no frame-pointer step from the crashing frame)")
    func framePointerOrder() throws {
        let dump = try Self.dump()
        let thread = try #require(dump.crashedThread)
        let frames = try dump.walk(thread) { _ in nil }
        #expect(frames.dropFirst().first?.trust == .scan)
        #expect(frames.dropFirst().first?.pc == 0x40207a)
        // Frame 1's function (0x402075, 7 bytes, no frame of its own) leaves main's rbp in
        // place, so the frame-pointer step from it lands in __libc_start_main, skipping main:
        // the known limit of frame pointers through frameless code, and why CFI comes first.
        #expect(frames.dropFirst(2).first?.trust == .framePointer)
        // Every frame's stack pointer is above its callee's.
        for (callee, caller) in zip(frames, frames.dropFirst()) { #expect(caller.registers[7]! > callee.registers[7]!) }
    }
}
