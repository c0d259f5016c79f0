import SymBytes

extension CoreFile {
    // Note types (Linux `include/uapi/linux/elf.h`).
    static let prstatusNote: UInt32 = 1
    static let prpsinfoNote: UInt32 = 3
    static let auxvNote: UInt32 = 6
    static let siginfoNote: UInt32 = 0x5349_4749  // "SIGI"
    static let fileNote: UInt32 = 0x4649_4c45     // "FILE"

    /// The core's fields, read from its bytes.
    struct Parsed {
        var machine: Machine = .x86_64
        var threads: [Thread] = []
        var mappedFiles: [MappedRange] = []
        var signal: SignalInfo?
        var auxiliaryVector: [(type: UInt64, value: UInt64)] = []
        var process: ProcessInfo?
        var segments: [Segment] = []

        init() {}

        init(_ bytes: UnsafeRawBufferPointer) throws(FormatError) {
            let reader = ByteReader(bytes)
            try reader.check(0, 64, "the ELF header")
            guard try reader.u32(at: 0) == 0x464c_457f else { throw FormatError(.badMagic, "not an ELF file", offset: 0) }
            guard try reader.u8(at: 4) == 2, try reader.u8(at: 5) == 1 else {
                throw FormatError(.unsupported, "only 64-bit little-endian core files are read", offset: 4)
            }
            guard try reader.u16(at: 16) == 4 else {
                throw FormatError(.invalidValue, "an ELF file but not a core file (e_type \(try reader.u16(at: 16)), not ET_CORE)", offset: 16)
            }
            let machineNumber = try reader.u16(at: 18)
            guard let machine = Machine(rawValue: machineNumber) else {
                throw FormatError(.unsupported, "a core file of ELF machine \(machineNumber) (x86_64 and aarch64 are read)", offset: 18)
            }
            self.machine = machine
            let headerOffset = try ByteReader.int(try reader.u64(at: 32), "e_phoff")
            let entrySize = Int(try reader.u16(at: 54))
            var count = Int(try reader.u16(at: 56))
            if count == 0xffff {
                // PN_XNUM: the real count is section header 0's sh_info.
                let sectionOffset = try ByteReader.int(try reader.u64(at: 40), "e_shoff")
                try reader.check(sectionOffset, 64, "section header 0 (PN_XNUM)")
                count = Int(try reader.u32(at: sectionOffset + 44))
            }
            guard entrySize >= 56 else {
                throw FormatError(.invalidValue, "program header entries of \(entrySize) bytes (56 needed)", offset: 54)
            }
            guard count <= CoreFile.maximumSegments else {
                throw FormatError(.limitExceeded, "\(count) program headers (at most \(CoreFile.maximumSegments) are read)", offset: 56)
            }
            let (tableSize, overflow) = count.multipliedReportingOverflow(by: entrySize)
            guard !overflow else { throw FormatError(.invalidValue, "program header table size overflows", offset: 56) }
            try reader.check(headerOffset, tableSize, "the program header table")
            var notes: [(offset: Int, size: Int)] = []
            for index in 0..<count {
                let entry = headerOffset + index * entrySize
                let type = try reader.u32(at: entry)
                let offset = try reader.u64(at: entry + 8)
                let address = try reader.u64(at: entry + 16)
                let fileSize = try reader.u64(at: entry + 32)
                let memorySize = try reader.u64(at: entry + 40)
                switch type {
                case 1:  // PT_LOAD
                    guard memorySize > 0 else { continue }
                    guard address <= UInt64.max - (memorySize - 1) else {
                        throw FormatError(.invalidValue, "segment \(index) at 0x\(String(address, radix: 16)) wraps past the address space", offset: UInt64(entry))
                    }
                    guard fileSize <= memorySize else {
                        throw FormatError(.invalidValue, "segment \(index) holds more bytes in the file than in memory", offset: UInt64(entry))
                    }
                    // A truncated core keeps what it has: the segment is clipped to the file.
                    let start = min(offset, UInt64(bytes.count))
                    let held = min(fileSize, UInt64(bytes.count) - start)
                    segments.append(Segment(address: address, memorySize: memorySize, fileOffset: Int(start), fileSize: Int(held)))
                case 4:  // PT_NOTE
                    let start = try ByteReader.int(offset, "note segment offset")
                    let size = try ByteReader.int(fileSize, "note segment size")
                    try reader.check(start, size, "note segment \(index)")
                    notes.append((start, size))
                default:
                    continue
                }
            }
            segments.sort { $0.address < $1.address }
            for (previous, next) in zip(segments, segments.dropFirst()) where next.address - previous.address < previous.memorySize {
                throw FormatError(.invalidValue, "segments at 0x\(String(previous.address, radix: 16)) and 0x\(String(next.address, radix: 16)) overlap")
            }
            var noteCount = 0
            for segment in notes {
                var position = segment.offset
                let end = segment.offset + segment.size
                while end - position >= 12 {
                    noteCount += 1
                    guard noteCount <= CoreFile.maximumNotes else {
                        throw FormatError(.limitExceeded, "more than \(CoreFile.maximumNotes) notes", offset: UInt64(position))
                    }
                    let nameSize = Int(try reader.u32(at: position))
                    let descriptorSize = Int(try reader.u32(at: position + 4))
                    let type = try reader.u32(at: position + 8)
                    // Names and descriptors are padded to 4 bytes (the kernel's core notes).
                    let nameStart = position + 12
                    let descriptorStart = nameStart + (nameSize + 3) / 4 * 4
                    let next = descriptorStart + (descriptorSize + 3) / 4 * 4
                    guard descriptorStart + descriptorSize <= end else {
                        throw FormatError(.truncated, "note of type 0x\(String(type, radix: 16)) extends past its segment", offset: UInt64(position))
                    }
                    let name = try reader.slice(nameStart, nameSize)
                    let descriptor = ByteReader(try reader.slice(descriptorStart, descriptorSize), baseOffset: UInt64(descriptorStart))
                    // "CORE" notes (and "LINUX" ones, whose types we do not read).
                    if name.count >= 4 && name[0] == 0x43 && name[1] == 0x4f && name[2] == 0x52 && name[3] == 0x45 {
                        try note(type, descriptor)
                    }
                    position = min(next, end)
                }
            }
            guard !threads.isEmpty else { throw FormatError(.invalidValue, "a core file without any thread (no NT_PRSTATUS note)") }
        }

        mutating func note(_ type: UInt32, _ data: ByteReader) throws(FormatError) {
            switch type {
            case CoreFile.prstatusNote: threads.append(try thread(data))
            case CoreFile.prpsinfoNote:
                // struct elf_prpsinfo (64-bit): pr_pid at 24, pr_fname[16] at 40, pr_psargs[80] at 56.
                try data.check(0, 136, "NT_PRPSINFO")
                process = ProcessInfo(pid: try data.u32(at: 24), name: Self.text(data, 40, 16), arguments: Self.text(data, 56, 80))
            case CoreFile.siginfoNote:
                // siginfo_t: si_signo, si_errno, si_code, then the union from offset 16.
                try data.check(0, 24, "NT_SIGINFO")
                let number = Int32(bitPattern: try data.u32(at: 0))
                let code = Int32(bitPattern: try data.u32(at: 8))
                // SIGILL 4, SIGTRAP 5, SIGBUS 7, SIGFPE 8, SIGSEGV 11 carry si_addr (for kernel
                // codes, si_code > 0).
                let faults: Set<Int32> = [4, 5, 7, 8, 11]
                signal = SignalInfo(number: number, code: code, errno: Int32(bitPattern: try data.u32(at: 4)),
                                    address: faults.contains(number) && code > 0 ? try data.u64(at: 16) : nil)
            case CoreFile.auxvNote:
                let count = data.count / 16
                for index in 0..<count {
                    let type = try data.u64(at: index * 16)
                    if type == 0 { break }  // AT_NULL
                    auxiliaryVector.append((type, try data.u64(at: index * 16 + 8)))
                }
            case CoreFile.fileNote:
                mappedFiles = try Self.files(data)
            default:
                break
            }
        }

        /// `struct elf_prstatus`: signal info (12 bytes), `pr_cursig` at 12, `pr_pid` at 32, the
        /// times, then `pr_reg` at 112 (x86_64 `user_regs_struct`, aarch64 `user_pt_regs`).
        func thread(_ data: ByteReader) throws(FormatError) -> Thread {
            let registerBase = 112
            var registers: [UInt16: UInt64] = [:]
            switch machine {
            case .x86_64:
                try data.check(0, registerBase + 27 * 8, "NT_PRSTATUS (x86_64)")
                // user_regs_struct order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
                // orig_rax rip cs eflags rsp; as DWARF numbers (nil: not a DWARF register read here).
                let order: [UInt16?] = [15, 14, 13, 12, 6, 3, 11, 10, 9, 8, 0, 2, 1, 4, 5, nil, 16, nil, nil, 7]
                for (index, number) in order.enumerated() {
                    if let number { registers[number] = try data.u64(at: registerBase + index * 8) }
                }
            case .aarch64:
                try data.check(0, registerBase + 34 * 8, "NT_PRSTATUS (aarch64)")
                // user_pt_regs: x0-x30, sp, pc, pstate.
                for index in 0..<33 { registers[UInt16(index)] = try data.u64(at: registerBase + index * 8) }
            }
            return Thread(id: try data.u32(at: 32), signal: try data.u16(at: 12), registers: registers,
                          pcRegister: machine == .x86_64 ? 16 : 32)
        }

        /// `NT_FILE`: count, page size, count × (start, end, page offset), then count paths.
        static func files(_ data: ByteReader) throws(FormatError) -> [MappedRange] {
            let count = try data.u64(at: 0)
            let pageSize = try data.u64(at: 8)
            // Each entry takes 24 bytes and a path of at least one byte.
            guard count <= UInt64(data.count / 25) else {
                throw FormatError(.invalidValue, "NT_FILE declares \(count) files in \(data.count) bytes", offset: data.baseOffset)
            }
            let entries = Int(count)
            var position = 16 + entries * 24
            var files: [MappedRange] = []
            files.reserveCapacity(entries)
            for index in 0..<entries {
                let start = try data.u64(at: 16 + index * 24)
                let end = try data.u64(at: 24 + index * 24)
                let (offset, overflow) = try data.u64(at: 32 + index * 24).multipliedReportingOverflow(by: pageSize)
                guard end >= start, !overflow else {
                    throw FormatError(.invalidValue, "NT_FILE entry \(index) is not a valid range", offset: data.baseOffset + UInt64(16 + index * 24))
                }
                var stop = position
                while stop < data.count && data.bytes[stop] != 0 && stop - position < CoreFile.maximumPathBytes { stop += 1 }
                guard stop < data.count, data.bytes[stop] == 0 else {
                    throw FormatError(.truncated, "NT_FILE path \(index) is unterminated or longer than \(CoreFile.maximumPathBytes) bytes", offset: data.baseOffset + UInt64(position))
                }
                let path = String(decoding: UnsafeRawBufferPointer(rebasing: data.bytes[position..<stop]), as: UTF8.self)
                files.append(MappedRange(start: start, end: end, fileOffset: offset, path: path))
                position = stop + 1
            }
            return files.sorted { $0.start < $1.start }
        }

        /// A NUL-padded text field.
        static func text(_ data: ByteReader, _ offset: Int, _ size: Int) -> String {
            let field = data.bytes[offset..<(offset + size)]
            let end = field.firstIndex(of: 0) ?? field.endIndex
            return String(decoding: UnsafeRawBufferPointer(rebasing: data.bytes[offset..<end]), as: UTF8.self)
        }
    }
}
