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

    @Test("With crash_linux's CFI and Breakpad's scan rule: its 5 frames, frame 1 by CFI at 0x402079 with its registers")
    func withCFI() throws {
        let dump = try Self.dump()
        let binary = try ELFFile(path: MinidumpTests.directory + "/crash_linux")
        let cfi = try CallFrameInfo.read(binary: binary)
        let thread = try #require(dump.crashedThread)
        let modules = dump.modules.map { module in
            WalkModule(start: module.base, end: module.base + UInt64(module.size),
                       bias: module.codeID == binary.buildID ? module.base - BreakpadWriter.loadAddress(of: binary) : 0,
                       cfi: module.codeID == binary.buildID ? cfi : nil)
        }
        var input = WalkInput(modules: modules, memory: { address, size in dump.read(address, size: size) })
        input.checksCallSites = false
        let frames = X86_64StackWalker.walk(context: try dump.context(of: thread).registers, input: input)
        #expect(frames.count == 5, "\(Self.describe(frames))")
        #expect(frames.first?.trust == .context)
        let frame = try #require(frames.dropFirst().first)
        #expect(frame.trust == .cfi)
        #expect(frame.lookupAddress == 4_202_617)
        #expect(frame.pc == 4_202_618)
        let expected: [UInt16: UInt64] = [16: 0x40207a, 7: 0x7ffe_a597_9b28, 15: 0, 14: 0, 3: 0,
                                          13: 0x7ffe_a597_9dc0, 12: 0x401f10, 6: 0x7ffe_a597_9ce0]
        #expect(frame.registers == expected)
        // crash(), start(), main by CFI, __libc_start_main by CFI (its return address is main's
        // rule; libc's own rules are not at hand), then Breakpad's fifth: a scanned 0x40207c,
        // two bytes past start()'s call, from whose rules the walk ends.
        #expect(frames.map(\.pc) == [0x40206d, 0x40207a, 0x402144, 0x7fa9_d1c0_c830, 0x40207c])
        #expect(frames.map(\.trust) == [.context, .cfi, .cfi, .cfi, .scan])

        // With the call check (the default), 0x40207c is refused: the dump's code before it is
        // `call; nop; ret`, no call ends there. The first four frames stay; the scan goes on
        // past it, as far as the modules' code allows.
        let checked = try dump.walk(thread) { module in
            module.codeID == binary.buildID ? (cfi, BreakpadWriter.loadAddress(of: binary)) : nil
        }
        #expect(Array(checked.prefix(4).map(\.pc)) == Array(frames.prefix(4).map(\.pc)), "\(Self.describe(checked))")
        #expect(!checked.contains { $0.pc == 0x40207c })
        #expect(checked.dropFirst(4).allSatisfy { $0.trust == .scan })
    }

    /// The dump's modules for the walker, without rules; `binary`'s code for its module when given.
    static func input(_ dump: Minidump, binary: ELFFile? = nil, checksCallSites: Bool) -> WalkInput {
        let modules = dump.modules.map { module -> WalkModule in
            let end = module.base + UInt64(module.size)
            guard let binary, module.codeID == binary.buildID else { return WalkModule(start: module.base, end: end, bias: 0, cfi: nil) }
            var walkModule = WalkModule(start: module.base, end: end, binary: binary, wholeCFI: true)
            walkModule.cfi = nil
            walkModule.rules = nil
            return walkModule
        }
        var input = WalkInput(modules: modules, memory: { address, size in dump.read(address, size: size) })
        input.checksCallSites = checksCallSites
        return input
    }

    static func describe(_ frames: [StackFrame]) -> String {
        "\(frames.map { "0x\(String($0.pc, radix: 16)) \($0.trust)" })"
    }

    @Test("Scanning only with Breakpad's rule (the call at value - 1 in a module): Breakpad's 16 frames, frame 1 as it reported")
    func breakpadScanRule() throws {
        let dump = try Self.dump()
        let thread = try #require(dump.crashedThread)
        let frames = X86_64StackWalker.walk(context: try dump.context(of: thread).registers,
                                            input: Self.input(dump, checksCallSites: false), methods: [.scan])
        #expect(frames.count == 16, "\(Self.describe(frames))")
        let frame = try #require(frames.dropFirst().first)
        #expect(frame.trust == .scan)
        #expect(frame.lookupAddress == 4_202_617)
        #expect(frame.registers[16] == 0x40207a)
        #expect(frame.registers[7] == 0x7ffe_a597_9b28)
        #expect(frame.registers[6] == 0x7ffe_a597_9ce0)
        #expect(frames.dropFirst().allSatisfy { $0.trust == .scan })
        for (callee, caller) in zip(frames, frames.dropFirst()) { #expect(caller.registers[7]! > callee.registers[7]!) }
        // The two words a rule testing the word itself took (18 frames, what Breakpad gave
        // before its 2020 change "subtract 1 from return pointers while scanning", and this
        // walker before): the first bytes of linux-gate.so and of ld-2.23.so, which no call of
        // theirs returns to. Both lie within reach of the scan and are skipped.
        let bases = Set(dump.modules.map(\.base))
        for slot: UInt64 in [0x7ffe_a597_9e48, 0x7ffe_a597_9eb8] {
            let word = try #require(dump.read(slot, size: 8))
            #expect(bases.contains(word))
            #expect(!frames.contains { $0.pc == word })
        }
    }

    @Test("Scanning with the call check: a candidate the dump's code shows after no call is skipped")
    func scanChecksCallSites() throws {
        let dump = try Self.dump()
        let thread = try #require(dump.crashedThread)
        let context = try dump.context(of: thread).registers
        // The dump keeps 256 bytes of code around the crashing pc (0x401fed...): Breakpad's
        // frame 4, 0x402006, follows `call *%rax; pop %rbp; jmp` there, a jump, not a call.
        let before = try #require(dump.read(0x402006 - 8, size: 8))
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: before >> (8 * UInt64($0))) }
        #expect(bytes == [0xff, 0xd0, 0x5d, 0xe9, 0x7a, 0xff, 0xff, 0xff])
        #expect(!X86_64StackWalker.endsWithCall(bytes))
        let fromMemory = X86_64StackWalker.walk(context: context, input: Self.input(dump, checksCallSites: true), methods: [.scan])
        // 0x40207a and 0x402144 follow calls (the first in the dump's code, the second unknown
        // there: accepted); libc's word at 0x...9b88 is accepted (libc's code is not at hand);
        // past the skipped 0x402006 no candidate lies within the scan's 40 words.
        #expect(fromMemory.map(\.pc) == [0x40206d, 0x40207a, 0x402144, 0x7fa9_d1c7_3800], "\(Self.describe(fromMemory))")
        // With crash_linux's code from its ELF file: every candidate of Breakpad's walk in
        // crash_linux but the true return addresses (start, main, _start) is refused.
        let binary = try ELFFile(path: MinidumpTests.directory + "/crash_linux")
        let withELF = Self.input(dump, binary: binary, checksCallSites: true)
        let module = try #require(withELF.module(at: 0x400000))
        for (candidate, isCall) in [(0x40207a, true), (0x402144, true), (0x401f39, true), (0x402006, false), (0x421330, false),
                                    (0x40207c, false), (0x401f10, false), (0x4213a0, false), (0x400040, false)] as [(UInt64, Bool)] {
            #expect(X86_64StackWalker.isReturnAddress(candidate, input: withELF) == isCall, "0x\(String(candidate, radix: 16))")
            #expect(module.code?(candidate - 8, 8) != .unknown)
        }
        let fromELF = X86_64StackWalker.walk(context: context, input: withELF, methods: [.scan])
        #expect(fromELF.map(\.pc) == fromMemory.map(\.pc))
    }

    @Test("endsWithCall: every call objdump decodes in crash_linux and libc, the REX and SIB forms, and not jumps")
    func callForms() throws {
        let calls: [[UInt8]] = [
            [0xe8, 0x05, 0x00, 0x00, 0x00], [0xff, 0xd0], [0x41, 0xff, 0xd3], [0xff, 0x15, 1, 2, 3, 4],
            [0xff, 0x10], [0xff, 0x50, 0x08], [0xff, 0x54, 0x24, 0x08], [0xff, 0x90, 1, 2, 3, 4],
            [0xff, 0x94, 0xc8, 1, 2, 3, 4], [0xff, 0x14, 0x25, 1, 2, 3, 4], [0x41, 0xff, 0x54, 0x24, 0x10],
        ]
        for call in calls { #expect(X86_64StackWalker.endsWithCall([0x90, 0x90] + call), "\(call)") }
        let others: [[UInt8]] = [[0xff, 0xe0], [0xc3], [0x90, 0x90, 0x90, 0x90, 0x90], [0xff, 0x25, 1, 2, 3, 4], [0xe9, 1, 2, 3, 4],
                                 [0xff, 0x60, 0x08], [0x48, 0x89, 0xc7]]
        for other in others { #expect(!X86_64StackWalker.endsWithCall([0x00, 0x00] + other), "\(other)") }
        // objdump's decoding is the oracle: the bytes before each call's return address.
        for path in [MinidumpTests.directory + "/crash_linux", "/lib/x86_64-linux-gnu/libc.so.6"] {
            let binary = try ELFFile(path: path)
            let listing = try Self.objdump(path)
            var checked = 0
            for (address, length, mnemonic) in listing where mnemonic.hasPrefix("call") {
                let end = address + UInt64(length)
                guard case .code(let bytes) = binary.loadedCode(at: end - 8, count: 8) else { continue }
                #expect(X86_64StackWalker.endsWithCall(bytes), "\(path) 0x\(String(address, radix: 16)) \(mnemonic)")
                checked += 1
            }
            #expect(checked > 100, "\(path): \(checked) calls")
        }
    }

    /// objdump -d's instructions: address, length, mnemonic (continuation lines of long
    /// instructions add their bytes).
    static func objdump(_ path: String) throws -> [(UInt64, Int, String)] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/objdump")
        process.arguments = ["-d", "-w", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var result: [(UInt64, Int, String)] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            // "  401136:\te8 05 00 00 00       \tcall   401140 <leaf>"
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 3, fields[0].hasSuffix(":"),
                  let address = UInt64(fields[0].dropLast().trimmingCharacters(in: .whitespaces), radix: 16) else { continue }
            let length = fields[1].split(separator: " ").count
            result.append((address, length, fields[2].trimmingCharacters(in: .whitespaces)))
        }
        return result
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
