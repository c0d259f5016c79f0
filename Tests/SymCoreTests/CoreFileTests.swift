import Foundation
import SymBytes
import SymCore
import Testing
import TestSupport

/// The ELF core reader over cores built here byte by byte (every field known), and hostile ones.
@Suite struct CoreFileTests {
    /// Builds a 64-bit little-endian ELF core: notes in one `PT_NOTE`, memory in `PT_LOAD`s.
    struct CoreBuilder {
        var machine: UInt16 = 62
        var type: UInt16 = 4
        var notes: [(name: String, type: UInt32, descriptor: [UInt8])] = []
        var loads: [(address: UInt64, bytes: [UInt8], memorySize: UInt64)] = []

        static func le(_ value: UInt64, _ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }

        /// An x86_64 `NT_PRSTATUS` for thread `tid` with `registers` (user_regs_struct order).
        static func prstatus(tid: UInt32, signal: UInt16, rip: UInt64, rsp: UInt64, rbp: UInt64) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 336)
            bytes.replaceSubrange(12..<14, with: le(UInt64(signal), 2))
            bytes.replaceSubrange(32..<36, with: le(UInt64(tid), 4))
            bytes.replaceSubrange((112 + 4 * 8)..<(112 + 5 * 8), with: le(rbp, 8))   // rbp
            bytes.replaceSubrange((112 + 16 * 8)..<(112 + 17 * 8), with: le(rip, 8))  // rip
            bytes.replaceSubrange((112 + 19 * 8)..<(112 + 20 * 8), with: le(rsp, 8))  // rsp
            return bytes
        }

        /// An `NT_FILE` note of `files` (start, end, page offset, path); page size 4096.
        static func fileNote(_ files: [(UInt64, UInt64, UInt64, String)], count: UInt64? = nil) -> [UInt8] {
            var bytes = le(count ?? UInt64(files.count), 8) + le(4096, 8)
            for file in files { bytes += le(file.0, 8) + le(file.1, 8) + le(file.2, 8) }
            for file in files { bytes += Array(file.3.utf8) + [0] }
            return bytes
        }

        static func siginfo(signal: UInt32, code: UInt32, address: UInt64) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 128)
            bytes.replaceSubrange(0..<4, with: le(UInt64(signal), 4))
            bytes.replaceSubrange(8..<12, with: le(UInt64(code), 4))
            bytes.replaceSubrange(16..<24, with: le(address, 8))
            return bytes
        }

        func build() -> [UInt8] {
            var noteBytes: [UInt8] = []
            for note in notes {
                let name = Array(note.name.utf8) + [0]
                noteBytes += Self.le(UInt64(name.count), 4) + Self.le(UInt64(note.descriptor.count), 4) + Self.le(UInt64(note.type), 4)
                noteBytes += name + [UInt8](repeating: 0, count: (4 - name.count % 4) % 4)
                noteBytes += note.descriptor + [UInt8](repeating: 0, count: (4 - note.descriptor.count % 4) % 4)
            }
            let headerCount = 1 + loads.count
            var offset = 64 + headerCount * 56
            var header = [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0] + [UInt8](repeating: 0, count: 8)
            header += Self.le(UInt64(type), 2) + Self.le(UInt64(machine), 2) + Self.le(1, 4) + Self.le(0, 8)
            header += Self.le(64, 8) + Self.le(0, 8) + Self.le(0, 4) + Self.le(64, 2) + Self.le(56, 2)
            header += Self.le(UInt64(headerCount), 2) + Self.le(64, 2) + Self.le(0, 2) + Self.le(0, 2)
            var table = Self.le(4, 4) + Self.le(0, 4) + Self.le(UInt64(offset), 8) + Self.le(0, 8) + Self.le(0, 8)
            table += Self.le(UInt64(noteBytes.count), 8) + Self.le(0, 8) + Self.le(4, 8)
            offset += noteBytes.count
            var data = noteBytes
            for load in loads {
                table += Self.le(1, 4) + Self.le(6, 4) + Self.le(UInt64(offset), 8) + Self.le(load.address, 8) + Self.le(0, 8)
                table += Self.le(UInt64(load.bytes.count), 8) + Self.le(load.memorySize, 8) + Self.le(4096, 8)
                offset += load.bytes.count
                data += load.bytes
            }
            return header + table + data
        }
    }

    static let stackBase: UInt64 = 0x7ffd_0000_0000

    /// A core of two threads, a mapped executable and libc, a SIGSEGV at 0x10, a stack page.
    static func sample() -> CoreBuilder {
        var builder = CoreBuilder()
        builder.notes = [
            ("CORE", 1, CoreBuilder.prstatus(tid: 100, signal: 11, rip: 0x5555_0000_1234, rsp: stackBase + 0x100, rbp: stackBase + 0x180)),
            ("CORE", 0x5349_4749, CoreBuilder.siginfo(signal: 11, code: 1, address: 0x10)),
            ("CORE", 1, CoreBuilder.prstatus(tid: 101, signal: 0, rip: 0x7fff_0000_2000, rsp: stackBase + 0x800, rbp: 0)),
            ("CORE", 0x4649_4c45, CoreBuilder.fileNote([(0x5555_0000_0000, 0x5555_0000_1000, 0, "/bin/app"),
                                                        (0x5555_0000_1000, 0x5555_0000_3000, 1, "/bin/app"),
                                                        (0x7fff_0000_0000, 0x7fff_0001_0000, 0, "/lib/libc.so.6"),
                                                        (0x7fff_0002_0000, 0x7fff_0003_0000, 5, "/data/file")])),
            ("CORE", 6, CoreBuilder.le(33, 8) + CoreBuilder.le(0x7fff_1000_0000, 8) + CoreBuilder.le(0, 16)),
        ]
        var stack = [UInt8](repeating: 0, count: 4096)
        stack.replaceSubrange(0x188..<0x190, with: CoreBuilder.le(0x5555_0000_1111, 8))
        builder.loads = [(stackBase, stack, 8192)]
        return builder
    }

    @Test("Threads, registers, mapped files, signal, auxv and memory, as written")
    func readsEveryNote() throws {
        let core = try CoreFile(bytes: Self.sample().build())
        #expect(core.machine == .x86_64)
        #expect(core.threads.map(\.id) == [100, 101])
        #expect(core.crashedThread?.id == 100)
        #expect(core.threads[0].pc == 0x5555_0000_1234)
        #expect(core.threads[0].registers[7] == Self.stackBase + 0x100)
        #expect(core.threads[0].registers[6] == Self.stackBase + 0x180)
        #expect(core.signal == CoreFile.SignalInfo(number: 11, code: 1, errno: 0, address: 0x10))
        #expect(core.signal?.name == "SIGSEGV")
        #expect(core.signal?.codeName == "SEGV_MAPERR")
        #expect(core.auxiliaryValue(33) == 0x7fff_1000_0000)
        #expect(core.mappedFiles.count == 4)
        #expect(core.mappedFiles[1].fileOffset == 4096)
        // Modules: files mapped from their first byte; /data/file (from page 5) is none.
        #expect(core.modules.map(\.path) == ["/bin/app", "/lib/libc.so.6"])
        #expect(core.modules[0].end == 0x5555_0000_3000)
        #expect(core.read(Self.stackBase + 0x188, size: 8) == 0x5555_0000_1111)
        // Narrower reads take the low bytes (little-endian); 1 to 8 bytes only.
        #expect(core.read(Self.stackBase + 0x188, size: 1) == 0x11)
        #expect(core.read(Self.stackBase + 0x188, size: 2) == 0x1111)
        #expect(core.read(Self.stackBase + 0x188, size: 6) == 0x5555_0000_1111)
        #expect(core.read(Self.stackBase + 0x18c, size: 4) == 0x5555)
        #expect(core.read(Self.stackBase + 0x188, size: 0) == nil)
        #expect(core.read(Self.stackBase + 0x188, size: 9) == nil)
        #expect(core.read(Self.stackBase + 4088, size: 8) != nil)
        // Held in memory (memsz) but not in the file (filesz): absent, not zero.
        #expect(core.read(Self.stackBase + 4096, size: 8) == nil)
        #expect(core.read(Self.stackBase + 4092, size: 8) == nil)
        #expect(core.read(Self.stackBase - 8, size: 8) == nil)
        #expect(core.read(UInt64.max - 3, size: 8) == nil)
    }

    @Test("aarch64: user_pt_regs x0-x30, sp, pc by DWARF number (pc as 32); the walk gives the pc alone")
    func aarch64Registers() throws {
        var builder = Self.sample()
        builder.machine = 183
        var status = [UInt8](repeating: 0, count: 392)
        status.replaceSubrange(32..<36, with: CoreBuilder.le(7, 4))
        for index in 0..<33 { status.replaceSubrange((112 + index * 8)..<(120 + index * 8), with: CoreBuilder.le(0x1000 + UInt64(index), 8)) }
        builder.notes = [("CORE", 1, status)]
        let core = try CoreFile(bytes: builder.build())
        #expect(core.machine == .aarch64)
        #expect(core.threads[0].registers[29] == 0x1000 + 29)  // fp
        #expect(core.threads[0].registers[30] == 0x1000 + 30)  // lr
        #expect(core.threads[0].registers[31] == 0x1000 + 31)  // sp
        #expect(core.threads[0].pc == 0x1000 + 32)
        let frames = try core.walk(core.threads[0], modules: [])
        #expect(frames.map(\.pc) == [0x1000 + 32])
        // An x86_64-sized prstatus is too short for aarch64's registers.
        builder.notes = [("CORE", 1, Array(status.prefix(336)))]
        #expect { try CoreFile(bytes: builder.build()) } throws: { ($0 as? FormatError)?.code == .truncated }
    }

    @Test("Not a core: an executable, a 32-bit file, another CPU, no thread")
    func refusesOtherFiles() {
        var executable = Self.sample()
        executable.type = 2
        #expect(throws: FormatError.self) { try CoreFile(bytes: executable.build()) }
        var arm32 = Self.sample()
        arm32.machine = 40
        #expect { try CoreFile(bytes: arm32.build()) } throws: { ($0 as? FormatError)?.code == .unsupported }
        var empty = Self.sample()
        empty.notes = []
        #expect { try CoreFile(bytes: empty.build()) } throws: { ($0 as? FormatError)?.message.contains("thread") == true }
        #expect(throws: FormatError.self) { try CoreFile(bytes: Array("not a core".utf8)) }
    }

    @Test("Hostile notes: a huge NT_FILE count, an unterminated path, a note past its segment, a short prstatus")
    func hostileNotes() {
        var huge = Self.sample()
        huge.notes[3].descriptor = CoreBuilder.fileNote([(0, 4096, 0, "/a")], count: 1 << 40)
        #expect { try CoreFile(bytes: huge.build()) } throws: { ($0 as? FormatError)?.code == .invalidValue }
        var unterminated = Self.sample()
        unterminated.notes[3].descriptor = CoreBuilder.le(1, 8) + CoreBuilder.le(4096, 8) + CoreBuilder.le(0, 8)
            + CoreBuilder.le(4096, 8) + CoreBuilder.le(0, 8) + Array("/abc".utf8)
        #expect { try CoreFile(bytes: unterminated.build()) } throws: { ($0 as? FormatError)?.code == .truncated }
        var reversed = Self.sample()
        reversed.notes[3].descriptor = CoreBuilder.fileNote([(8192, 4096, 0, "/a")])
        #expect { try CoreFile(bytes: reversed.build()) } throws: { ($0 as? FormatError)?.code == .invalidValue }
        var short = Self.sample()
        short.notes[0].descriptor = Array(short.notes[0].descriptor.prefix(200))
        #expect { try CoreFile(bytes: short.build()) } throws: { ($0 as? FormatError)?.code == .truncated }
        // A descriptor size past the note segment (the first note's descsz made enormous).
        var bytes = Self.sample().build()
        let firstNote = 64 + 2 * 56
        bytes.replaceSubrange((firstNote + 4)..<(firstNote + 8), with: CoreBuilder.le(0xffff_fff0, 4))
        #expect { try CoreFile(bytes: bytes) } throws: { ($0 as? FormatError)?.code == .truncated }
    }

    @Test("Hostile program headers: overlapping segments, a wrapping segment, a table past the file, PN_XNUM")
    func hostileSegments() {
        var overlapping = Self.sample()
        overlapping.loads.append((Self.stackBase + 4096, [1, 2, 3], 4096))
        #expect { try CoreFile(bytes: overlapping.build()) } throws: { ($0 as? FormatError)?.message.contains("overlap") == true }
        var wrapping = Self.sample()
        wrapping.loads = [(UInt64.max - 10, [1], 4096)]
        #expect { try CoreFile(bytes: wrapping.build()) } throws: { ($0 as? FormatError)?.code == .invalidValue }
        var bytes = Self.sample().build()
        bytes.replaceSubrange(56..<58, with: CoreBuilder.le(0xfff0, 2))  // e_phnum past the file
        #expect { try CoreFile(bytes: bytes) } throws: { ($0 as? FormatError)?.code == .truncated }
        bytes = Self.sample().build()
        bytes.replaceSubrange(56..<58, with: CoreBuilder.le(0xffff, 2))  // PN_XNUM, e_shoff 0: section 0 is the header
        #expect(throws: FormatError.self) { try CoreFile(bytes: bytes) }
        bytes = Self.sample().build()
        bytes.replaceSubrange(32..<40, with: CoreBuilder.le(UInt64.max, 8))  // e_phoff
        #expect(throws: FormatError.self) { try CoreFile(bytes: bytes) }
    }

    @Test("A segment the file does not hold (a truncated core) reads as absent; the notes still read")
    func truncatedMemory() throws {
        let bytes = Self.sample().build()
        let core = try CoreFile(bytes: Array(bytes.prefix(bytes.count - 4000)))
        #expect(core.read(Self.stackBase, size: 8) == 0)
        #expect(core.read(Self.stackBase + 0x188, size: 8) == nil)
        #expect(core.threads.count == 2)
    }

    @Test("Truncated at every byte and 2,000 seeded mutations: an error or a core, never a trap")
    func truncationAndMutations() {
        let bytes = Self.sample().build()
        for length in 0..<bytes.count {
            _ = try? CoreFile(bytes: Array(bytes.prefix(length)))
        }
        var random = SplitMix64(seed: 15)
        for _ in 0..<2000 {
            var mutated = bytes
            for _ in 0..<(1 + Int(random.next() % 8)) {
                let position = Int(random.next() % UInt64(mutated.count))
                switch random.next() % 3 {
                case 0: mutated[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: mutated.replaceSubrange(position..<min(mutated.count, position + 4), with: CoreBuilder.le(0xffff_ffff, 4))
                default: mutated.replaceSubrange(position..<min(mutated.count, position + 8), with: CoreBuilder.le(1 << 31, 8))
                }
            }
            if let core = try? CoreFile(bytes: Array(mutated.prefix(bytes.count))) {
                _ = core.modules
                _ = core.read(Self.stackBase, size: 8)
            }
        }
    }

    @Test("Build-ids from the memory of a mapped image's first page (ELF header, PT_NOTE, NT_GNU_BUILD_ID)")
    func buildIDFromMemory() throws {
        // A minimal ELF image: header, one PT_LOAD at 0 and one PT_NOTE pointing at a GNU note.
        var image = [UInt8](repeating: 0, count: 4096)
        let header: [UInt8] = [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]
        image.replaceSubrange(0..<8, with: header)
        image.replaceSubrange(32..<40, with: CoreBuilder.le(64, 8))
        image.replaceSubrange(54..<56, with: CoreBuilder.le(56, 2))
        image.replaceSubrange(56..<58, with: CoreBuilder.le(2, 2))
        image.replaceSubrange(64..<68, with: CoreBuilder.le(1, 4))             // PT_LOAD, p_vaddr 0
        image.replaceSubrange(120..<124, with: CoreBuilder.le(4, 4))           // PT_NOTE
        image.replaceSubrange(136..<144, with: CoreBuilder.le(0x200, 8))       // p_vaddr
        image.replaceSubrange(152..<160, with: CoreBuilder.le(36, 8))          // p_filesz
        image.replaceSubrange(168..<176, with: CoreBuilder.le(4, 8))           // p_align
        let note = CoreBuilder.le(4, 4) + CoreBuilder.le(20, 4) + CoreBuilder.le(3, 4) + Array("GNU\0".utf8) + Array(1...20)
        image.replaceSubrange(0x200..<(0x200 + note.count), with: note)
        var builder = Self.sample()
        builder.loads.append((0x5555_0000_0000, image, 4096))
        let core = try CoreFile(bytes: builder.build())
        #expect(core.modules.first?.buildID == "0102030405060708090a0b0c0d0e0f1011121314")
        // libc's first page is not in this core: its build-id must come from its file.
        #expect(core.modules.last?.buildID == nil)
    }
}
