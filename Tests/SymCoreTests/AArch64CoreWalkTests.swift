import Foundation
import SymBytes
import SymCore
import SymELF
import SymTable
import SymUnwind
import Symbolication
import Testing
import TestSupport

/// The aarch64 walker on real aarch64 cores: static programs built by the cross compiler and
/// crashed under qemu-user (`scripts/build-aarch64-core-fixtures`, run into a temporary
/// directory), walked with the program's CFI from its ELF file and from its table alone, against
/// gdb's `thread apply all bt` (gdb-multiarch) and `eu-stack` on the same core.
///
/// Why the oracles differ from us, and from each other, on these cores:
/// - gdb stops at `main` (`backtrace past-main` is off); we go on to `__libc_start_main` and
///   `_start`, whose CFI marks x30 undefined.
/// - gdb loops forever on the signal-abort core (qemu's trampoline), and stops at frame 1 on the
///   pointer-authentication core (a qemu core has no `NT_ARM_PAC_MASK` note, so gdb does not
///   strip the signed return address): those two are checked against eu-stack.
/// - eu-stack prints signed return addresses as they are (we strip them), and after a first frame
///   that is not a leaf it adds the thread's x30 as frame 1 (a return address left by an earlier
///   call in the same function, which the CFI row says is not the caller: gdb goes straight on).
@Suite struct AArch64CoreWalkTests {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static let cores: String? = {
        let directory = NSTemporaryDirectory() + "crashsym-aarch64-cores-" + UUID().uuidString
        guard let run = try? Tool.run("/bin/bash", [root + "/scripts/build-aarch64-core-fixtures", directory]), run.status == 0 else { return nil }
        return directory
    }()

    /// The program's one module (static, not position-independent: mapped at its link address).
    static func module(_ path: String, table: Bool) throws -> WalkModule {
        let binary = try ELFFile(path: path)
        let layout = try #require(ModuleLayout(binary))
        let end = layout.segments.map(\.addresses.upperBound).max() ?? layout.mappingBase
        if table {
            let stored = try SymbolTable(bytes: try ModuleConverter.table(binary: binary, debugFile: nil))
            return try #require(WalkModule(start: layout.mappingBase, end: end, table: stored))
        }
        return WalkModule(start: layout.mappingBase, end: end, binary: binary)
    }

    /// Each thread of fixture `name` walked: (thread id, the thread's x30, frames).
    static func walk(_ name: String, table: Bool = false, methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws
        -> [(id: Int, lr: UInt64?, frames: [StackFrame])] {
        let directory = try #require(cores, "scripts/build-aarch64-core-fixtures failed (aarch64-linux-gnu-gcc, qemu-user: scripts/deps test)")
        let core = try CoreFile(file: MappedFile(path: "\(directory)/\(name).core"))
        #expect(core.machine == .aarch64)
        let modules = [try module("\(directory)/\(name)", table: table)]
        return try core.threads.map { (Int($0.id), $0.registers[30], try core.walk($0, modules: modules, methods: methods)) }
    }

    /// gdb's `thread apply all bt`: pcs by thread id (a frame printed without an address, at the
    /// start of a line-table row, gives nil).
    static func gdb(_ name: String) throws -> [Int: [UInt64?]] {
        let directory = try #require(cores)
        let run = try Tool.run("/usr/bin/timeout", ["60", "gdb-multiarch", "-nx", "-batch", "-ex", "set pagination off",
                                                    "-ex", "set print frame-arguments none", "-ex", "thread apply all bt",
                                                    "\(directory)/\(name)", "\(directory)/\(name).core"])
        #expect(run.status == 0, "gdb-multiarch: \(run.stderr)")
        var threads: [Int: [UInt64?]] = [:]
        var current: Int?
        for line in run.text.split(separator: "\n") {
            if line.hasPrefix("Thread "), let range = line.range(of: "(LWP ") {
                current = Int(line[range.upperBound...].prefix { $0.isNumber })
                if let current { threads[current] = [] }
            } else if line.hasPrefix("#"), let current {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                let address = words.count > 1 && words[1].hasPrefix("0x") ? UInt64(words[1].dropFirst(2), radix: 16) : nil
                threads[current]?.append(address)
            }
        }
        return threads
    }

    /// eu-stack's pcs by thread id (`eu-stack -i --core CORE -e PROGRAM`).
    static func euStack(_ name: String) throws -> [Int: [UInt64]] {
        let directory = try #require(cores)
        let run = try Tool.run("/usr/bin/eu-stack", ["--core", "\(directory)/\(name).core", "-e", "\(directory)/\(name)"])
        var threads: [Int: [UInt64]] = [:]
        var current: Int?
        for line in run.text.split(separator: "\n") {
            if line.hasPrefix("TID ") {
                current = Int(line.dropFirst(4).prefix { $0.isNumber })
                if let current { threads[current] = [] }
            } else if line.hasPrefix("#"), let current {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                if words.count > 1, words[1].hasPrefix("0x"), let pc = UInt64(words[1].dropFirst(2), radix: 16) { threads[current]?.append(pc) }
            }
        }
        return threads
    }

    /// eu-stack's frames as ours should be: signed return addresses stripped, the x30 frame it
    /// adds after a first frame that is not a leaf dropped (see the suite's comment).
    static func expected(euStack frames: [UInt64], lr: UInt64?, ours: [StackFrame]) -> [UInt64] {
        var frames = frames.map { $0 & 0x0000_ffff_ffff_ffff }
        if frames.count > 2, ours.count > 1, frames[1] == lr, ours[1].pc != lr { frames.remove(at: 1) }
        return frames
    }

    @Test("Every thread's frames are gdb's, then on past main to _start", arguments: ["crash-O0", "crash-O2", "threads", "libc-strlen"])
    func agreesWithGDB(_ name: String) throws {
        let walks = try Self.walk(name)
        let reference = try Self.gdb(name)
        #expect(reference.count == walks.count)
        if name == "threads" { #expect(walks.count == 4) }
        for walk in walks {
            let gdbFrames = try #require(reference[walk.id], "gdb has no thread \(walk.id)")
            let ours = walk.frames.map(\.pc)
            #expect(gdbFrames.count >= 2 && ours.count >= gdbFrames.count, "gdb \(gdbFrames), ours \(ours)")
            for (index, pc) in gdbFrames.enumerated() where index < ours.count {
                if let pc { #expect(ours[index] == pc, "\(name) thread \(walk.id) frame \(index): gdb \(pc), ours \(ours)") }
            }
            // Static programs have CFI everywhere: no frame was found another way.
            #expect(walk.frames.dropFirst().allSatisfy { $0.trust == .cfi }, "\(walk.frames.map { ($0.pc, $0.trust) })")
        }
        // The crashed thread goes on past main to _start, where the CFI ends the stack.
        let first = try #require(walks.first)
        let gdbFirst = try #require(reference[first.id])
        #expect(first.frames.count > gdbFirst.count)
    }

    @Test("Signed return addresses (pac-ret) are stripped: the frames are eu-stack's without the authentication codes")
    func pointerAuthentication() throws {
        let walk = try #require(try Self.walk("crash-pac").first)
        let reference = try #require(try Self.euStack("crash-pac")[walk.id])
        // The core really holds signed return addresses (eu-stack prints them as they are).
        #expect(reference.contains { $0 >> 48 != 0 }, "\(reference)")
        #expect(walk.frames.map(\.pc) == Self.expected(euStack: reference, lr: walk.lr, ours: walk.frames))
        #expect(walk.frames.allSatisfy { $0.pc >> 48 == 0 })
        // gdb, without the core's PAC mask, stops at frame 1; we reach main and _start.
        #expect(walk.frames.count >= 6)
    }

    @Test("abort() in a SIGSEGV handler: through qemu's sigreturn trampoline into the faulting code, its pc exact")
    func signalFrame() throws {
        let directory = try #require(Self.cores)
        let walk = try #require(try Self.walk("signal-abort").first)
        let reference = try #require(try Self.euStack("signal-abort")[walk.id])
        // The frame after the trampoline is the interrupted one: registers from the sigcontext.
        let interrupted = try #require(walk.frames.firstIndex { $0.isInterrupted })
        #expect(walk.frames[interrupted].trust == .context)
        #expect(walk.frames[interrupted].lookupAddress == walk.frames[interrupted].pc)
        #expect(walk.frames.filter(\.isInterrupted).count == 1)
        #expect(interrupted > 3 && interrupted + 3 < walk.frames.count)
        // eu-stack cannot read the sigcontext: from the trampoline it follows x29, the faulting
        // function's frame record, to that function's caller, and so lacks the interrupted frame.
        var ours = walk.frames
        ours.remove(at: interrupted)
        #expect(ours.map(\.pc) == Self.expected(euStack: reference, lr: walk.lr, ours: walk.frames))
        // The interrupted pc is the faulting store inside `fault` (the program's symbol table).
        let symbols = try Tool.output("/usr/bin/aarch64-linux-gnu-nm", ["-S", "\(directory)/signal-abort"])
        let lines: [[Substring]] = symbols.split(separator: "\n").map { $0.split(separator: " ") }
        let fault: [Substring] = try #require(lines.first { $0.count == 4 && $0[3] == "fault" })
        let start: UInt64 = try #require(UInt64(fault[0], radix: 16))
        let size: UInt64 = try #require(UInt64(fault[1], radix: 16))
        let pc = walk.frames[interrupted].pc
        #expect(pc >= start && pc < start + size, "0x\(String(pc, radix: 16)) outside fault")
    }

    @Test("The table alone walks every thread as the ELF file's CFI does", arguments: ["crash-O0", "crash-O2", "crash-pac", "threads", "libc-strlen", "signal-abort"])
    func tableWalkEqualsELFWalk(_ name: String) throws {
        let fromELF = try Self.walk(name)
        let fromTable = try Self.walk(name, table: true)
        #expect(fromELF.map(\.frames) == fromTable.map(\.frames))
    }

    @Test("Without CFI: the leaf's caller from x30, then the frame-record chain (x29) finds gdb's callers at -O0")
    func framePointers() throws {
        let byCFI = try #require(try Self.walk("crash-O0").first)
        let byRecords = try #require(try Self.walk("crash-O0", methods: [.framePointer]).first)
        let reference = try #require(try Self.gdb("crash-O0")[byCFI.id])
        // Up to main (gdb's frames).
        #expect(Array(byRecords.frames.map(\.pc).prefix(reference.count)) == Array(byCFI.frames.map(\.pc).prefix(reference.count)),
                "\(byRecords.frames.map { ($0.pc, $0.trust) })")
        #expect(byRecords.frames.count >= reference.count)
        #expect(byRecords.frames.dropFirst().allSatisfy { $0.trust == .framePointer })
        // Scanning alone cannot find the leaf's caller: the leaf never stored x30.
        let byScan = try #require(try Self.walk("crash-O0", methods: [.scan]).first)
        #expect(byScan.frames.count > 1 && byScan.frames[1].pc != byCFI.frames[1].pc)
    }
    /// aarch64-linux-gnu-objdump's instructions of `path`: address, instruction word, mnemonic.
    static func objdump(_ path: String) throws -> [(UInt64, UInt32, String)] {
        let text = try Tool.output("/usr/bin/aarch64-linux-gnu-objdump", ["-d", "-w", path])
        return text.split(separator: "\n").compactMap { line in
            // "  400158:\t94000010 \tbl\t400198 <leaf>"
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 3, fields[0].hasSuffix(":"),
                  let address = UInt64(fields[0].dropLast().trimmingCharacters(in: .whitespaces), radix: 16),
                  let word = UInt32(fields[1].trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            return (address, word, fields[2].trimmingCharacters(in: .whitespaces))
        }
    }

    @Test("isCall: every instruction objdump decodes in the static programs (libc linked in), calls exactly")
    func callInstructions() throws {
        let directory = try #require(Self.cores, "scripts/build-aarch64-core-fixtures failed")
        var calls = 0, others = 0
        for name in ["crash-O2", "crash-pac"] {
            for (address, word, mnemonic) in try Self.objdump("\(directory)/\(name)") {
                let isCall = ["bl", "blr", "blraa", "blrab", "blraaz", "blrabz"].contains(mnemonic)
                #expect(AArch64StackWalker.isCall(word) == isCall, "\(name) 0x\(String(address, radix: 16)) \(mnemonic) \(String(word, radix: 16))")
                if isCall { calls += 1 } else { others += 1 }
            }
        }
        #expect(calls > 1000 && others > 10_000)
    }

    @Test("Scanning checks the call: each scanned return address follows a BL or BLR, a word in the program that does not is skipped",
          arguments: ["crash-O0", "crash-O2", "threads", "libc-strlen"])
    func scanChecksCallSites(_ name: String) throws {
        let directory = try #require(Self.cores)
        let program = "\(directory)/\(name)"
        let callSites = Set(try Self.objdump(program).filter { ["bl", "blr"].contains($0.2) }.map { $0.0 + 4 })
        let core = try CoreFile(file: MappedFile(path: "\(program).core"))
        let module = try Self.module(program, table: false)
        let input = WalkInput(modules: [module]) { address, size in core.read(address, size: size) }
        var refused = 0
        for thread in core.threads {
            let frames = try core.walk(thread, modules: [module], methods: [.scan])
            #expect(frames.count > 1)
            for frame in frames.dropFirst() { #expect(callSites.contains(frame.pc), "0x\(String(frame.pc, radix: 16)) follows no call") }
            // The words of the stack the scan passed over: those in the program but after no call are refused.
            let sp = try #require(thread.registers[31])
            for slot in stride(from: sp, to: sp + 160 * 8, by: 8) {
                guard let word = core.read(slot, size: 8), word % 4 == 0, word >= module.start + 4, word < module.end else { continue }
                #expect(AArch64StackWalker.isReturnAddress(word, input: input) == callSites.contains(word), "0x\(String(word, radix: 16))")
                if !callSites.contains(word) { refused += 1 }
            }
        }
        // The stacks hold such words (pointers to the program's data and code), which the scan
        // took for return addresses before it checked the call.
        if name == "threads" || name == "crash-O0" { #expect(refused > 0) }
    }

    @Test("An ARM64 minidump of a core's thread (MDRawContextARM64, its stack) walks to the core's frames",
          arguments: ["crash-O2", "libc-strlen", "crash-pac"])
    func minidumpOfTheCore(_ name: String) throws {
        let directory = try #require(Self.cores)
        let core = try CoreFile(file: MappedFile(path: "\(directory)/\(name).core"))
        let thread = try #require(core.threads.first)
        let sp = try #require(thread.registers[31])
        let segment = try #require(core.segment(at: sp))
        let stack = try #require(core.bytes(at: sp, count: Int(min(segment.address + segment.memorySize - sp, 1 << 18))))
        var bytes: [UInt8] = []
        func u16(_ value: UInt16) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        func u32(_ value: UInt32) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        func u64(_ value: UInt64) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        // Header, a directory of two streams (thread list at 56, system info at 108), then the
        // ARM64 context (912 bytes) and the stack.
        u32(0x504d_444d); u32(0xa793); u32(2); u32(32); u32(0); u32(0); u64(0)
        let context = UInt32(56 + 52 + 56), memory = context + UInt32(MinidumpContext.arm64Size)
        u32(3); u32(52); u32(56)
        u32(7); u32(56); u32(108)
        u32(1); u32(UInt32(thread.id)); u32(0); u32(0); u32(0); u64(0)
        u64(sp); u32(UInt32(stack.count)); u32(memory)
        u32(UInt32(MinidumpContext.arm64Size)); u32(context)
        u16(12); bytes += [UInt8](repeating: 0, count: 18); u32(0x8201); bytes += [UInt8](repeating: 0, count: 32)
        u32(0x0040_0002); u32(0)
        for number in UInt16(0)...32 { u64(try #require(thread.registers[number])) }
        bytes += [UInt8](repeating: 0, count: MinidumpContext.arm64Size - 8 - 33 * 8)
        bytes += stack
        let dump = try Minidump(bytes: bytes)
        #expect(dump.system?.cpu == "arm64")
        let module = try Self.module("\(directory)/\(name)", table: true)
        let fromDump = try dump.walk(try #require(dump.threads.first), modules: [module])
        let fromCore = try core.walk(thread, modules: [module])
        #expect(fromDump.map(\.pc) == fromCore.map(\.pc))
        #expect(fromDump.count > 4)
    }
}


/// The aarch64 walker's stops and rules on synthetic stacks (memory a dictionary of words).
@Suite struct AArch64WalkerTests {
    static func input(_ words: [UInt64: UInt64], module: Range<UInt64> = 0x40_0000..<0x50_0000) -> WalkInput {
        WalkInput(modules: [WalkModule(start: module.lowerBound, end: module.upperBound, bias: 0, cfi: nil)]) { address, size in
            guard size == 8 else { return nil }
            return words[address]
        }
    }

    @Test("A frame-record chain that loops stops: the stack pointer must move up")
    func loopStops() {
        // Two records pointing at each other: x29 0x8000 -> 0x8010 -> 0x8000 ...
        let memory: [UInt64: UInt64] = [0x8000: 0x8010, 0x8008: 0x40_1000, 0x8010: 0x8000, 0x8018: 0x40_2000]
        // No x30: the first caller by scanning (0x8008), the next by its record (0x8010), whose saved x29
        // points back below the stack pointer: the walk ends there.
        let frames = AArch64StackWalker.walk(context: [29: 0x8000, 31: 0x8000, 32: 0x40_0100],
                                             input: Self.input(memory), methods: [.framePointer, .scan])
        #expect(frames.map(\.pc) == [0x40_0100, 0x40_1000, 0x40_2000], "\(frames.map(\.pc))")
        let sps = frames.compactMap { $0.registers[31] }
        #expect(zip(sps, sps.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("A long chain stops at the frame limit")
    func frameLimit() {
        var memory: [UInt64: UInt64] = [:]
        for index in UInt64(0)..<100 {
            memory[0x8000 + index * 16] = 0x8000 + (index + 1) * 16
            memory[0x8008 + index * 16] = 0x40_1000 + index * 4
        }
        let frames = AArch64StackWalker.walk(context: [29: 0x8000, 31: 0x8000, 32: 0x40_0100], input: Self.input(memory),
                                             maximumFrames: 10, methods: [.framePointer, .scan])
        #expect(frames.count == 10)
    }

    @Test("A leaf's CFI row without a rule for x30 returns to x30; a signed x30 is stripped")
    func leafReturnsToLinkRegister() throws {
        let row = UnwindRow(address: 0x40_0000, cfa: .registerOffset(register: 31, offset: 0), registers: [])
        let entry = UnwindEntry(start: 0x40_0000, end: 0x40_0100, returnAddressRegister: 30, isSignalFrame: false,
                                source: .ehFrame, rows: [row])
        let module = WalkModule(start: 0x40_0000, end: 0x50_0000, bias: 0, cfi: nil) { _ in (entry, row) }
        let input = WalkInput(modules: [module]) { _, _ in nil }
        let signed: UInt64 = 0x002a_0000_0040_0204
        let frames = AArch64StackWalker.walk(context: [31: 0x7ff0, 32: 0x40_0010, 30: signed], input: input, maximumFrames: 2)
        #expect(frames.count == 2)
        #expect(frames.last?.pc == 0x40_0204)
        #expect(frames.last?.trust == .cfi)
    }

    @Test("A minidump's ARM64 context gives x0-x30, sp and pc by DWARF number")
    func minidumpContext() throws {
        var bytes = [UInt8](repeating: 0, count: MinidumpContext.arm64Size)
        for index in 0..<33 {
            let value = UInt64(0x1000 + index)
            for byte in 0..<8 { bytes[8 + index * 8 + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
        }
        let context = try MinidumpContext(arm64: bytes)
        #expect(context.cpu == .arm64)
        #expect(context.registers[29] == 0x1000 + 29)
        #expect(context.sp == 0x1000 + 31)
        #expect(context.pc == 0x1000 + 32)
        #expect(throws: FormatError.self) { try MinidumpContext(arm64: Array(bytes.prefix(400))) }
    }
}
