import Foundation
import SymBytes
import SymELF
import SymUnwind
import Testing
import TestSupport

/// SymUnwind's reader on real sections and on hostile ones.
@Suite struct CallFrameInfoTests {
    static let target64 = CallFrameInfo.Target(addressSize: 8, littleEndian: true)

    static func read(_ bytes: [UInt8], address: UInt64, kind: CallFrameSection, target: CallFrameInfo.Target = target64) -> CallFrameInfo {
        bytes.withUnsafeBytes { buffer in
            let section = CallFrameInfo.Section(bytes: buffer, address: address)
            return kind == .ehFrame
                ? CallFrameInfo.read(ehFrame: section, debugFrame: nil, target: target)
                : CallFrameInfo.read(ehFrame: nil, debugFrame: section, target: target)
        }
    }

    @Test("crash_linux: frame 1's function has the rules Breakpad's walker used (rsp+8, ra at cfa-8)")
    func knownRows() throws {
        let cfi = try UnwindFixtures.callFrameInfo(UnwindFixtures.reference + "/crash_linux")
        #expect(cfi.diagnostics.isEmpty)
        // 0x402079 (README: frame 1) lies in the FDE 0x402075..0x40207c.
        let (entry, row) = try #require(cfi.row(at: 0x402079))
        #expect(entry.start == 0x402075 && entry.end == 0x40207c)
        #expect(row.cfa == .registerOffset(register: 7, offset: 8))
        #expect(row.rule(for: 16) == .offset(-8))
        // 0x40207c..: push rbp; mov rbp, rsp; push rbx: three rows after the first.
        let main = try #require(cfi.entry(at: 0x40207c))
        #expect(main.rows.map(\.address) == [0x40207c, 0x40207d, 0x402080, 0x402088, 0x4021d2])
        #expect(main.rows[2].cfa == .registerOffset(register: 6, offset: 16))
        #expect(main.rows[3].rule(for: 3) == .offset(-24))
        // _start: the return address is undefined (the outermost frame).
        #expect(cfi.row(at: 0x401f10)?.row.rule(for: 16) == .undefined)
    }

    @Test("The .eh_frame_hdr lookup finds the same entry as the whole-section read, at every FDE")
    func headerLookup() throws {
        let path = UnwindFixtures.reference + "/crash_linux"
        let cfi = try UnwindFixtures.callFrameInfo(path)
        let frame = try #require(try UnwindFixtures.section(".eh_frame", of: path))
        let header = try #require(try UnwindFixtures.section(".eh_frame_hdr", of: path))
        var checked = 0
        try frame.bytes.withUnsafeBytes { frameBytes in
            try header.bytes.withUnsafeBytes { headerBytes in
                for entry in cfi.entries where entry.source == .ehFrame {
                    for address in [entry.start, entry.end - 1] {
                        let found = try CallFrameInfo.entry(at: address,
                                                            ehFrame: .init(bytes: frameBytes, address: frame.address),
                                                            header: .init(bytes: headerBytes, address: header.address),
                                                            target: Self.target64)
                        #expect(found == cfi.entry(at: address), "0x\(String(address, radix: 16))")
                        checked += 1
                    }
                }
                // Below the first FDE: nothing.
                #expect(try CallFrameInfo.entry(at: 0x400000, ehFrame: .init(bytes: frameBytes, address: frame.address),
                                                header: .init(bytes: headerBytes, address: header.address),
                                                target: Self.target64) == nil)
            }
        }
        #expect(checked > 1000)
    }

    @Test(".debug_frame (DWARF CIE ids, 32-bit addresses): i386 and aarch64 fixtures")
    func debugFrame() throws {
        let i386 = try UnwindFixtures.callFrameInfo(UnwindFixtures.elf("i386-clang-start-O2"))
        #expect(i386.diagnostics.isEmpty)
        #expect(!i386.entries.isEmpty && i386.entries.allSatisfy { $0.source == .debugFrame })
        // i386: CFA = esp + 4, return address (eip, 8) at CFA - 4 on entry.
        let first = try #require(i386.entries.first?.rows.first)
        #expect(first.cfa == .registerOffset(register: 4, offset: 4))
        #expect(first.rule(for: 8) == .offset(-4))
        let aarch64 = try UnwindFixtures.callFrameInfo(UnwindFixtures.elf("aarch64-clang-start-O2"))
        #expect(aarch64.diagnostics.isEmpty && !aarch64.entries.isEmpty)
        #expect(aarch64.entries.allSatisfy { $0.returnAddressRegister == 30 })
    }

    @Test("Truncation at every byte of real sections never traps and keeps the entries before the cut")
    func truncation() throws {
        for (path, name, kind, target) in [
            (UnwindFixtures.elf("gcc-c-O2-dwarf5"), ".eh_frame", CallFrameSection.ehFrame, Self.target64),
            (UnwindFixtures.elf("i386-clang-start-O2"), ".debug_frame", .debugFrame,
             CallFrameInfo.Target(addressSize: 4, littleEndian: true)),
            (UnwindFixtures.elf("aarch64-clang-start-O2"), ".debug_frame", .debugFrame, Self.target64),
        ] {
            let section = try #require(try UnwindFixtures.section(name, of: path))
            let whole = Self.read(section.bytes, address: section.address, kind: kind, target: target)
            #expect(!whole.entries.isEmpty)
            for length in 0..<section.bytes.count {
                let cut = Self.read(Array(section.bytes.prefix(length)), address: section.address, kind: kind, target: target)
                // Every entry read from a prefix is one of the whole section's.
                for entry in cut.entries { #expect(whole.entries.contains(entry), "\(path) cut at \(length)") }
            }
        }
    }

    @Test("Seeded random mutations of a real .eh_frame never trap or hang", arguments: 0..<4)
    func mutation(_ round: UInt64) throws {
        let path = UnwindFixtures.reference + "/crash_linux"
        let section = try #require(try UnwindFixtures.section(".eh_frame", of: path))
        var random = SplitMix64(seed: 0x15_0000 + round)
        for _ in 0..<50 {
            var bytes = section.bytes
            for _ in 0..<random.int(1...16) {
                let index = random.int(0...(bytes.count - 1))
                switch random.int(0...2) {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes[index] = [0x00, 0xff, 0x7f, 0x80][random.int(0...3)]
                default: bytes[index] ^= 1 << UInt8(random.int(0...7))
                }
            }
            let cfi = Self.read(bytes, address: section.address, kind: .ehFrame)
            for entry in cfi.entries {
                #expect(entry.start < entry.end)
                #expect(entry.rows.allSatisfy { $0.address >= entry.start && $0.address < entry.end })
            }
        }
    }

    /// A little `.eh_frame` writer for hand-made hostile records.
    static func ehFrame(cie: [UInt8], fde: (UInt32) -> [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        bytes += u32(UInt32(cie.count + 4)) + u32(0) + cie
        let fdeStart = UInt32(bytes.count)
        let body = fde(fdeStart + 4)
        bytes += u32(UInt32(body.count + 4)) + u32(fdeStart + 4) + body
        bytes += u32(0)
        return bytes
    }

    /// CIE: version 1, "zR", code 1, data -8, ra 16, FDE pointers absolute udata8.
    static let plainCIE: [UInt8] = [1, 0x7a, 0x52, 0, 1, 0x78, 16, 1, 0x04, 0x0c, 7, 8, 0x90, 1]

    static func fde(start: UInt64, length: UInt64, program: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: start.littleEndian) { Array($0) } + withUnsafeBytes(of: length.littleEndian) { Array($0) }
            + [0] + program
    }

    @Test("Hand-made hostile records: each is skipped with a diagnostic, none traps")
    func hostileRecords() {
        let cases: [(String, [UInt8])] = [
            ("remember_state past the depth limit", Array(repeating: 0x0a, count: 100)),
            ("restore_state with nothing remembered", [0x0b]),
            ("set_loc backwards", [0x41, 0x01, 0x10, 0, 0, 0, 0, 0, 0, 0]),
            ("a register number past the limit", [0x05, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x08]),
            ("a factored offset that overflows", [0x05, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            ("an expression longer than the record", [0x10, 0x03, 0xff, 0x7f]),
            ("an unknown instruction", [0x3f]),
            ("def_cfa_offset without a register rule (after an expression CFA)", [0x0f, 0x01, 0x96, 0x0e, 0x10]),
        ]
        for (what, program) in cases {
            let bytes = Self.ehFrame(cie: Self.plainCIE) { _ in Self.fde(start: 0x1000, length: 0x100, program: program) }
            let cfi = Self.read(bytes, address: 0, kind: .ehFrame)
            #expect(cfi.entries.isEmpty, "\(what)")
            #expect(cfi.diagnostics.count == 1, "\(what): \(cfi.diagnostics)")
        }
        // A range that wraps around the address space.
        let wrap = Self.ehFrame(cie: Self.plainCIE) { _ in Self.fde(start: UInt64.max - 4, length: 0x100, program: []) }
        #expect(Self.read(wrap, address: 0, kind: .ehFrame).diagnostics.first?.code == .invalidValue)
        // A record length past the section ends the walk with one diagnostic.
        var long = Self.ehFrame(cie: Self.plainCIE) { _ in Self.fde(start: 0x1000, length: 0x100, program: []) }
        long[0] = 0xf0
        #expect(Self.read(long, address: 0, kind: .ehFrame).diagnostics.first?.code == .truncated)
        // A CIE pointer before the section.
        var wild = Self.ehFrame(cie: Self.plainCIE) { _ in Self.fde(start: 0x1000, length: 0x100, program: []) }
        wild[Self.plainCIE.count + 8 + 4] = 0xff
        wild[Self.plainCIE.count + 8 + 5] = 0xff
        let wildCFI = Self.read(wild, address: 0, kind: .ehFrame)
        #expect(wildCFI.entries.isEmpty && wildCFI.diagnostics.count == 1)
    }

    @Test("Signal frames (augmentation S), remember/restore state and restore")
    func signalFrameAndState() throws {
        // "zRS": signal frame. Program: def_cfa_offset 16; offset rbp at cfa-16; advance 1;
        // remember; def_cfa_offset 32; advance 1; restore_state; advance 1; restore rbp.
        let cie: [UInt8] = [1, 0x7a, 0x52, 0x53, 0, 1, 0x78, 16, 1, 0x04, 0x0c, 7, 8, 0x90, 1]
        let program: [UInt8] = [0x0e, 16, 0x86, 2, 0x41, 0x0a, 0x0e, 32, 0x41, 0x0b, 0x41, 0xc6]
        let bytes = Self.ehFrame(cie: cie) { _ in Self.fde(start: 0x1000, length: 0x10, program: program) }
        let cfi = Self.read(bytes, address: 0, kind: .ehFrame)
        #expect(cfi.diagnostics.isEmpty)
        let entry = try #require(cfi.entries.first)
        #expect(entry.isSignalFrame)
        #expect(entry.rows.map(\.address) == [0x1000, 0x1001, 0x1002, 0x1003])
        #expect(entry.rows[0].cfa == .registerOffset(register: 7, offset: 16))
        #expect(entry.rows[0].rule(for: 6) == .offset(-16))
        #expect(entry.rows[1].cfa == .registerOffset(register: 7, offset: 32))
        #expect(entry.rows[2].cfa == .registerOffset(register: 7, offset: 16))
        #expect(entry.rows[3].rule(for: 6) == nil)  // restored to the CIE's: none
        #expect(entry.rows[3].rule(for: 16) == .offset(-8))
    }

    @Test("DWARF expressions: the PLT's CFA, the signal frame's, and bounded hostile ones")
    func expressions() throws {
        // gcc's .plt CFA: rsp + 8 + ((rip & 15) >= 11) << 3
        let plt: [UInt8] = [0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22]
        func cfa(rip: UInt64) throws -> UInt64 {
            try DWARFExpression.evaluate(plt, register: { $0 == 7 ? 0x7000 : $0 == 16 ? rip : nil }, memory: { _, _ in nil })
        }
        #expect(try cfa(rip: 0x1020) == 0x7008)
        #expect(try cfa(rip: 0x102b) == 0x7010)
        // __restore_rt: CFA = *(rsp + 160)
        let signal: [UInt8] = [0x77, 0xa0, 0x01, 0x06]
        #expect(try DWARFExpression.evaluate(signal, register: { $0 == 7 ? 0x1000 : nil },
                                             memory: { $0 == 0x10a0 && $1 == 8 ? 0xdead : nil }) == 0xdead)
        // A loop (skip -3) stops at the step limit; a push loop at the stack limit.
        #expect(throws: FormatError.self) {
            try DWARFExpression.evaluate([0x30, 0x2f, 0xfd, 0xff], register: { _ in 0 }, memory: { _, _ in 0 })
        }
        #expect(throws: FormatError.self) {
            try DWARFExpression.evaluate([0x30, 0x12, 0x2f, 0xfc, 0xff], register: { _ in 0 }, memory: { _, _ in 0 })
        }
        // Division by zero, an empty stack, a truncated operand, unreadable memory.
        for bad: [UInt8] in [[0x31, 0x30, 0x1b], [0x22], [0x0e, 1, 2], [0x30, 0x06], []] {
            #expect(throws: FormatError.self) {
                try DWARFExpression.evaluate(bad, register: { _ in 0 }, memory: { _, _ in nil })
            }
        }
    }
}
