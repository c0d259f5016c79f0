import SymBytes

/// An ELF core read once, front to back, from a stream that cannot seek (the kernel's
/// `core_pattern` pipe, a decompressor), within a memory bound whatever the core's size.
///
/// A Linux core puts its notes first (`PT_NOTE` right after the program headers, then the
/// `PT_LOAD` data in address order): the notes say which memory a walk needs — each thread's
/// stack from its sp up (`Limits.stackBytes`), the first page of each mapped file (its ELF
/// header and build-id note), the vDSO image — and only that is kept while the rest streams by.
/// What is kept is laid out as a small core of its own (the notes a walk reads, `NT_PRSTATUS`,
/// `NT_PRPSINFO`, `NT_AUXV`, `NT_SIGINFO`, `NT_FILE`, and one `PT_LOAD` per kept range) and read by
/// `CoreFile`'s one reader, so the walk and the report are those of a core file on disk.
///
/// Hostile input: every size and count is bounded (the notes and the kept memory together by
/// `Limits.memoryBytes`, the program headers by `CoreFile.maximumSegments`); memory that comes
/// before the notes in the stream, or that a forged header places behind bytes already passed,
/// reads as absent.
public enum StreamedCore {
    /// What is kept at most.
    public struct Limits: Sendable, Equatable {
        /// Notes and memory kept together (the reader's own buffers come on top: 256 KiB).
        public var memoryBytes: Int
        /// Bytes of each thread's stack kept, from its stack pointer up.
        public var stackBytes: Int

        /// Limits.
        public init(memoryBytes: Int = 64 << 20, stackBytes: Int = 512 << 10) {
            self.memoryBytes = memoryBytes
            self.stackBytes = stackBytes
        }
    }

    /// A core read from a stream.
    public struct Reduced: Sendable {
        /// The notes and the memory kept, as a core.
        public var core: CoreFile
        /// Bytes read from the stream.
        public var bytesRead: UInt64
        /// Bytes of memory kept (without the notes).
        public var memoryKept: Int
        /// The stream ended before the end of the data its program headers declare (a cut core).
        public var truncated: Bool
        /// Threads whose stack was kept shorter than `Limits.stackBytes` for the memory bound.
        public var stacksCut: Int
        /// Whether reading stopped once everything wanted was kept (`readToEnd` false).
        public var stoppedEarly: Bool
    }

    /// Reads the core `source` gives (each call fills up to the buffer's size and returns the
    /// count, 0 at the end). With `readToEnd`, the rest of the stream is read and discarded once
    /// everything wanted is kept (a pipe whose writer must finish); else reading stops there.
    public static func read(from source: @escaping (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int, limits: Limits,
                            readToEnd: Bool = true) throws(FormatError) -> Reduced {
        var input = Input(source: source)
        defer { input.buffer.deallocate() }
        let header = try input.take(64)
        guard header.count == 64 else { throw FormatError(.truncated, "the core ends inside its ELF header", offset: UInt64(header.count)) }
        let reader = { (offset: Int, size: Int) -> UInt64 in
            (0..<size).reduce(UInt64(0)) { $0 | UInt64(header[offset + $1]) << (8 * UInt64($1)) }
        }
        guard reader(0, 4) == 0x464c_457f else { throw FormatError(.badMagic, "not an ELF file", offset: 0) }
        guard header[4] == 2, header[5] == 1 else { throw FormatError(.unsupported, "only 64-bit little-endian core files are read", offset: 4) }
        guard reader(16, 2) == 4 else {
            throw FormatError(.invalidValue, "an ELF file but not a core file (e_type \(reader(16, 2)), not ET_CORE)", offset: 16)
        }
        guard let machine = CoreFile.Machine(rawValue: UInt16(reader(18, 2))) else {
            throw FormatError(.unsupported, "a core file of ELF machine \(reader(18, 2)) (x86_64 and aarch64 are read)", offset: 18)
        }
        let tableOffset = reader(32, 8), entrySize = Int(reader(54, 2)), declared = Int(reader(56, 2))
        guard entrySize >= 56 else { throw FormatError(.invalidValue, "program header entries of \(entrySize) bytes (56 needed)", offset: 54) }
        guard tableOffset >= 64 else {
            throw FormatError(.unsupported, "the program headers overlap the ELF header (e_phoff \(tableOffset))", offset: 32)
        }
        guard try input.skip(to: tableOffset) else { throw FormatError(.truncated, "the core ends before its program headers", offset: tableOffset) }

        // The program headers. PN_XNUM (65535): the count is in section header 0, which the
        // kernel writes at the end; the table then runs up to the first segment's data.
        var loads: [Load] = []
        var notes: [(offset: UInt64, size: UInt64)] = []
        var firstData = UInt64.max
        var index = 0
        while declared == 0xffff ? input.position < firstData : index < declared {
            guard index < CoreFile.maximumSegments else {
                throw FormatError(.limitExceeded, "more than \(CoreFile.maximumSegments) program headers", offset: 56)
            }
            let entry = try input.take(entrySize)
            guard entry.count == entrySize else { throw FormatError(.truncated, "the core ends inside program header \(index)", offset: input.position) }
            let word = { (offset: Int, size: Int) -> UInt64 in
                (0..<size).reduce(UInt64(0)) { $0 | UInt64(entry[offset + $1]) << (8 * UInt64($1)) }
            }
            let type = word(0, 4), offset = word(8, 8), address = word(16, 8), fileSize = word(32, 8), memorySize = word(40, 8)
            let at = tableOffset &+ UInt64(index * entrySize)
            if type == 1 && memorySize > 0 {
                guard address <= UInt64.max - (memorySize - 1) else {
                    throw FormatError(.invalidValue, "segment \(index) at 0x\(String(address, radix: 16)) wraps past the address space", offset: at)
                }
                guard fileSize <= memorySize else { throw FormatError(.invalidValue, "segment \(index) holds more bytes in the file than in memory", offset: at) }
                loads.append(Load(address: address, memorySize: memorySize, offset: offset, fileSize: fileSize))
                if fileSize > 0 { firstData = min(firstData, offset) }
                // Each segment's bookkeeping counts against the bound (65,530 mappings by default).
                guard loads.count * MemoryLayout<Load>.stride <= limits.memoryBytes else {
                    throw FormatError(.limitExceeded, "\(loads.count) segments: their headers alone pass the memory bound", offset: at)
                }
            } else if type == 4 {
                notes.append((offset, fileSize))
                if fileSize > 0 { firstData = min(firstData, offset) }
            }
            index += 1
        }
        loads.sort { $0.address < $1.address }
        for (previous, next) in zip(loads, loads.dropFirst()) where next.address - previous.address < previous.memorySize {
            throw FormatError(.invalidValue, "segments at 0x\(String(previous.address, radix: 16)) and 0x\(String(next.address, radix: 16)) overlap")
        }

        // The data in stream order: notes, then memory.
        enum Piece { case note(UInt64, UInt64), load(Int) }
        var pieces: [(offset: UInt64, piece: Piece)] = notes.map { ($0.offset, .note($0.offset, $0.size)) }
        for (index, load) in loads.enumerated() where load.fileSize > 0 { pieces.append((load.offset, .load(index))) }
        pieces.sort { $0.offset < $1.offset }
        let declaredEnd = pieces.reduce(UInt64(0)) { end, piece in
            switch piece.piece {
            case .note(let offset, let size): max(end, offset &+ size)
            case .load(let index): max(end, loads[index].offset &+ loads[index].fileSize)
            }
        }

        var keptNotes: [UInt8] = []
        var layout: Layout?
        var stacksCut = 0
        var noteCount = 0
        for (_, piece) in pieces {
            switch piece {
            case .note(let offset, let size):
                // Notes after the memory was decided on (no Linux core has them) are not read.
                guard layout == nil, try input.skip(to: offset) else { continue }
                try readNotes(&input, size: size, into: &keptNotes, count: &noteCount, limits: limits)
            case .load(let index):
                if layout == nil {
                    let chosen = try choose(header: header, machine: machine, notes: keptNotes, loads: loads, limits: limits)
                    layout = chosen.layout
                    stacksCut = chosen.stacksCut
                }
                try layout!.fill(loads[index], from: &input)
            }
            if let layout, !readToEnd, layout.complete { break }
        }
        var final: Layout
        if let layout { final = layout } else {
            final = try choose(header: header, machine: machine, notes: keptNotes, loads: loads, limits: limits).layout
        }
        if readToEnd { try input.drain() }
        // Cut: the stream ended before the data the headers declare; stopped early: it did not end.
        let truncated = input.ended && input.position < declaredEnd
        let stoppedEarly = !input.ended && input.position < declaredEnd
        return Reduced(core: try CoreFile(bytes: final.finish()), bytesRead: input.position, memoryKept: final.dataBytes,
                       truncated: truncated, stacksCut: stacksCut, stoppedEarly: stoppedEarly)
    }

    /// A `PT_LOAD` segment as its program header declares it.
    struct Load {
        var address: UInt64
        var memorySize: UInt64
        var offset: UInt64
        var fileSize: UInt64
    }

    /// The notes a walk reads (owner "CORE"): threads, process, auxiliary vector, signal, files.
    static let keptNoteTypes: Set<UInt32> = [CoreFile.prstatusNote, CoreFile.prpsinfoNote, CoreFile.auxvNote,
                                             CoreFile.siginfoNote, CoreFile.fileNote]

    /// Reads the notes of a `PT_NOTE` segment of `size` bytes, appending those a walk reads
    /// (header, name and descriptor, each padded to 4 bytes) to `kept`.
    static func readNotes(_ input: inout Input, size: UInt64, into kept: inout [UInt8], count: inout Int,
                          limits: Limits) throws(FormatError) {
        var remaining = size
        while remaining >= 12 {
            count += 1
            guard count <= CoreFile.maximumNotes else {
                throw FormatError(.limitExceeded, "more than \(CoreFile.maximumNotes) notes", offset: input.position)
            }
            let start = input.position
            let head = try input.take(12)
            guard head.count == 12 else { throw FormatError(.truncated, "the core ends inside its notes", offset: input.position) }
            let nameSize = UInt64(head[0]) | UInt64(head[1]) << 8 | UInt64(head[2]) << 16 | UInt64(head[3]) << 24
            let descriptorSize = UInt64(head[4]) | UInt64(head[5]) << 8 | UInt64(head[6]) << 16 | UInt64(head[7]) << 24
            let type = UInt32(head[8]) | UInt32(head[9]) << 8 | UInt32(head[10]) << 16 | UInt32(head[11]) << 24
            let paddedName = (nameSize + 3) / 4 * 4, paddedDescriptor = (descriptorSize + 3) / 4 * 4
            remaining -= 12
            guard paddedName <= remaining, descriptorSize <= remaining - paddedName else {
                throw FormatError(.truncated, "note of type 0x\(String(type, radix: 16)) extends past its segment", offset: start)
            }
            // Owners are short ("CORE", "LINUX"): a long name is skipped, never allocated.
            var name: [UInt8] = []
            if paddedName <= 64 {
                name = try input.take(Int(paddedName))
            } else if !(try input.skip(to: input.position + paddedName)) {
                name = [0]  // short: reported below
            }
            guard paddedName > 64 ? name.isEmpty : name.count == Int(paddedName) else {
                throw FormatError(.truncated, "the core ends inside its notes", offset: input.position)
            }
            let isCore = nameSize >= 4 && name.count >= 4 && name[0] == 0x43 && name[1] == 0x4f && name[2] == 0x52 && name[3] == 0x45
            let body = min(paddedDescriptor, remaining - paddedName)
            if isCore && keptNoteTypes.contains(type) {
                guard kept.count + 12 + Int(paddedName) + Int(paddedDescriptor) <= limits.memoryBytes else {
                    throw FormatError(.limitExceeded, "the core's notes pass the memory bound (\(limits.memoryBytes) bytes)", offset: start)
                }
                kept += head
                kept += name
                let descriptor = try input.take(Int(descriptorSize))
                guard descriptor.count == Int(descriptorSize) else {
                    throw FormatError(.truncated, "the core ends inside its notes", offset: input.position)
                }
                kept += descriptor
                kept += [UInt8](repeating: 0, count: Int(paddedDescriptor - descriptorSize))
                guard try input.skip(to: input.position + (body - descriptorSize)) else {
                    throw FormatError(.truncated, "the core ends inside its notes", offset: input.position)
                }
            } else {
                guard try input.skip(to: input.position + body) else { throw FormatError(.truncated, "the core ends inside its notes", offset: input.position) }
            }
            remaining -= paddedName + body
        }
        guard try input.skip(to: input.position + remaining) else { throw FormatError(.truncated, "the core ends inside its notes", offset: input.position) }
    }

    /// The memory to keep, from the notes read so far: each thread's stack (the crashed thread
    /// first) from just below its stack pointer up to `stackBytes`, the vDSO image, the first
    /// page of each file mapped from its start; within `memoryBytes` with the notes.
    static func choose(header: [UInt8], machine: CoreFile.Machine, notes: [UInt8], loads: [Load],
                       limits: Limits) throws(FormatError) -> (layout: Layout, stacksCut: Int) {
        let parsed = try CoreFile(bytes: Layout.core(header: header, notes: notes, ranges: [], data: 0))
        var budget = limits.memoryBytes - notes.count
        var wanted: [(start: UInt64, end: UInt64)] = []
        var stacksCut = 0
        func segment(at address: UInt64) -> Load? {
            var low = 0, high = loads.count
            while low < high {
                let middle = (low + high) / 2
                if loads[middle].address <= address { low = middle + 1 } else { high = middle }
            }
            guard low > 0, address - loads[low - 1].address < loads[low - 1].memorySize else { return nil }
            return loads[low - 1]
        }
        func want(_ start: UInt64, _ count: UInt64) -> Bool {
            guard let load = segment(at: start) else { return true }
            let end = min(start &+ min(count, UInt64(max(0, budget))), load.address &+ (load.memorySize - 1) &+ 1)
            guard end > start else { return count == 0 }
            wanted.append((start, end))
            budget -= Int(end - start)
            return end - start == count || end == load.address &+ (load.memorySize - 1) &+ 1
        }
        let spRegister: UInt16 = machine == .x86_64 ? 7 : 31
        // Below the stack pointer: x86_64's red zone (128 bytes) and what a leaf frame may use.
        let below: UInt64 = 256
        let crashed = parsed.crashedThread?.id
        let threads = parsed.threads.filter { $0.id == crashed } + parsed.threads.filter { $0.id != crashed }
        func stack(_ thread: CoreFile.Thread) {
            // A program header each: the kept core stays under PN_XNUM.
            guard wanted.count < 60_000, let sp = thread.registers[spRegister], let load = segment(at: sp) else { return }
            let start = max(load.address, sp >= below ? sp - below : 0)
            if !want(start, (sp - start) &+ UInt64(limits.stackBytes)) { stacksCut += 1 }
        }
        if let first = threads.first { stack(first) }
        if let vdso = parsed.auxiliaryValue(33) { _ = want(vdso, 1 << 20) }
        for file in parsed.mappedFiles where file.fileOffset == 0 && file.end > file.start && wanted.count < 60_000 {
            _ = want(file.start, min(file.end - file.start, 4096))
        }
        for thread in threads.dropFirst() { stack(thread) }
        // One range per address span: ranges that touch are merged.
        wanted.sort { $0.start < $1.start }
        var merged: [(start: UInt64, end: UInt64)] = []
        for range in wanted {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1].end = max(last.end, range.end)
            } else {
                merged.append(range)
            }
        }
        // Each range within the part of its segment the core holds, in stream order.
        var chunks: [Chunk] = []
        for range in merged {
            var address = range.start
            while address < range.end, let load = segment(at: address) {
                let loadEnd = load.address &+ (load.memorySize - 1) &+ 1
                let end = min(range.end, loadEnd)
                guard end > address else { break }
                let held = load.address &+ load.fileSize
                if address < held {
                    chunks.append(Chunk(address: address, size: Int(min(end, held) - address), fileOffset: load.offset &+ (address - load.address)))
                }
                address = end
            }
        }
        chunks.sort { $0.fileOffset < $1.fileOffset }
        return (Layout(header: header, notes: notes, chunks: chunks), stacksCut)
    }

    /// A kept range: `size` bytes at `address`, found at `fileOffset` of the stream.
    struct Chunk {
        var address: UInt64
        var size: Int
        var fileOffset: UInt64
        /// Bytes of it read so far.
        var filled = 0
        /// Where it goes in the kept core.
        var outputOffset = 0
    }

    /// The kept core under construction: the ELF header, a `PT_NOTE` and one `PT_LOAD` per
    /// chunk, the notes, then the chunks' bytes, allocated once.
    struct Layout {
        var bytes: [UInt8]
        var chunks: [Chunk]
        var next = 0
        let dataStart: Int
        var dataBytes: Int { chunks.reduce(0) { $0 + $1.filled } }
        /// Every chunk passed in the stream (filled, or lost to a cut stream).
        var complete: Bool { next >= chunks.count }

        init(header: [UInt8], notes: [UInt8], chunks: [Chunk]) {
            var chunks = chunks
            let total = chunks.reduce(0) { $0 + $1.size }
            bytes = Layout.core(header: header, notes: notes, ranges: chunks, data: total)
            dataStart = bytes.count - total
            var offset = dataStart
            for index in chunks.indices {
                chunks[index].outputOffset = offset
                offset += chunks[index].size
            }
            self.chunks = chunks
        }

        /// The header, program headers and notes of a core of `ranges`, with room for `data` bytes.
        static func core(header: [UInt8], notes: [UInt8], ranges: [Chunk], data: Int) -> [UInt8] {
            let count = 1 + ranges.count
            var bytes = header
            bytes.reserveCapacity(64 + count * 56 + notes.count + data)
            func put(_ value: UInt64, at offset: Int, _ size: Int) {
                for index in 0..<size { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
            }
            put(64, at: 32, 8)                   // e_phoff
            put(0, at: 40, 8)                    // e_shoff: no sections
            put(56, at: 54, 2)                   // e_phentsize
            put(UInt64(min(count, 0xffff)), at: 56, 2)
            put(0, at: 58, 2)                    // e_shentsize
            put(0, at: 60, 2)                    // e_shnum
            put(0, at: 62, 2)                    // e_shstrndx
            let notesOffset = 64 + count * 56
            var entries = [UInt8](repeating: 0, count: count * 56)
            func entry(_ index: Int, type: UInt32, offset: Int, address: UInt64, size: Int) {
                let base = index * 56
                for (field, value, width) in [(0, UInt64(type), 4), (4, 4, 4), (8, UInt64(offset), 8), (16, address, 8),
                                              (32, UInt64(size), 8), (40, UInt64(size), 8), (48, 4, 8)] {
                    for byte in 0..<width { entries[base + field + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
                }
            }
            entry(0, type: 4, offset: notesOffset, address: 0, size: notes.count)
            var offset = notesOffset + notes.count
            for (index, range) in ranges.enumerated() {
                entry(index + 1, type: 1, offset: offset, address: range.address, size: range.size)
                offset += range.size
            }
            bytes += entries
            bytes += notes
            bytes += [UInt8](repeating: 0, count: data)
            return bytes
        }

        /// Copies the chunks inside `load`'s data from the stream (skipping what lies between).
        mutating func fill(_ load: Load, from input: inout Input) throws(FormatError) {
            let end = load.offset &+ load.fileSize
            while next < chunks.count, chunks[next].fileOffset < end {
                let chunk = chunks[next]
                if chunk.fileOffset >= load.offset {
                    // Bytes a forged header placed behind the stream's position read as absent.
                    if try input.skip(to: chunk.fileOffset) {
                        let filled = bytes.withUnsafeMutableBytes { buffer in
                            Result { () throws(FormatError) -> Int in
                                try input.copy(chunk.size, into: UnsafeMutableRawBufferPointer(
                                    rebasing: buffer[chunk.outputOffset..<(chunk.outputOffset + chunk.size)]))
                            }
                        }
                        chunks[next].filled = try filled.get()
                    }
                }
                next += 1
            }
        }

        /// The kept core: each chunk's segment holds the bytes that arrived.
        mutating func finish() -> [UInt8] {
            next = chunks.count
            for (index, chunk) in chunks.enumerated() where chunk.filled < chunk.size {
                let base = 64 + (index + 1) * 56 + 32  // p_filesz
                for byte in 0..<8 { bytes[base + byte] = UInt8(truncatingIfNeeded: UInt64(chunk.filled) >> (8 * UInt64(byte))) }
            }
            return bytes
        }
    }

    /// A forward-only reader over the stream, 256 KiB at a time.
    struct Input {
        let source: (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        var start = 0, end = 0
        /// The stream offset of `buffer[start]`.
        var position: UInt64 = 0
        var ended = false

        init(source: @escaping (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int) {
            self.source = source
        }

        /// Refills the buffer when it is used up; false at the end of the stream.
        mutating func fill() throws(FormatError) -> Bool {
            if start < end { return true }
            guard !ended else { return false }
            let count = try source(buffer)
            guard count > 0 else {
                ended = true
                return false
            }
            start = 0
            end = min(count, buffer.count)
            return true
        }

        /// Up to `count` bytes (fewer only at the end of the stream).
        mutating func take(_ count: Int) throws(FormatError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { buffer in Result { () throws(FormatError) -> Int in try copy(count, into: buffer) } }
            return Array(bytes.prefix(try got.get()))
        }

        /// Copies up to `count` bytes into `target`; the count copied.
        mutating func copy(_ count: Int, into target: UnsafeMutableRawBufferPointer) throws(FormatError) -> Int {
            var copied = 0
            while copied < count, try fill() {
                let step = min(count - copied, end - start)
                (target.baseAddress! + copied).copyMemory(from: buffer.baseAddress! + start, byteCount: step)
                copied += step
                start += step
                position += UInt64(step)
            }
            return copied
        }

        /// Reads and discards up to stream offset `offset`; false when it is behind (already
        /// passed) or past the end of the stream.
        mutating func skip(to offset: UInt64) throws(FormatError) -> Bool {
            guard offset >= position else { return false }
            while position < offset, try fill() {
                let step = Int(min(offset - position, UInt64(end - start)))
                start += step
                position += UInt64(step)
            }
            return position == offset
        }

        /// Reads the rest of the stream.
        mutating func drain() throws(FormatError) {
            while try fill() {
                position += UInt64(end - start)
                start = end
            }
        }
    }
}
