#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes
import SymDemangle
import SymTable
import Synchronization
import CPrefetch

/// Renders `lookup` answers straight into bytes: the hot path for answering many addresses.
///
/// Names are demangled and JSON-escaped once per function-name record, paths joined once per
/// file record, cached by record index (one slot per record, so no two collide), so a frame seen
/// before reads no string data. Cached bytes live in arenas: no `String` or array per frame.
/// Whole answers are not memoised: on large tables most addresses fall in distinct ranges and
/// distinct inline chains (large-cpp: 2.3 M ranges, 358 k scope records), and storing answers
/// cost more copying than the rare repeat saved.
public struct FrameRenderer: ~Copyable {
    /// Output styles.
    public enum Style: Sendable {
        /// `0x…` then one indented line per frame.
        case text
        /// One JSON object per address: `{"address":"0x…","frames":[…]}`.
        case json
    }

    private let table: SymbolTable
    private let style: Style
    private let demangler = Demangler()
    /// Whether names are demangled (otherwise printed as stored).
    private let demangles: Bool
    /// What `SymbolTable.warmFrames` read, kept so that its reads are not optimised away.
    private var warmth: UInt32 = 0
    /// Names and paths rendered for the table, by record, shared with the other renderers made
    /// from the same `RenderedStrings` (the other threads of one `lookup`).
    public let strings: RenderedStrings
    /// Where this renderer writes the strings it renders: the free end of its current chunk.
    private var chunk: UnsafeMutableRawPointer?
    private var chunkFree = 0
    /// Where this renderer decompresses blocks of the table's stored demangled names.
    private var scratch = DecompressionScratch()
    /// The block of stored names decompressed last (-1: none): every stored name in it is
    /// published, so a record of it still without an entry has none stored.
    private var scannedBlock = -1

    /// A direct-mapped cache of rendered bytes keyed by integers (string-table positions, range
    /// indices): cheaper than a `Dictionary` (no SipHash per frame); a collision only costs
    /// re-rendering. Values are slices of one arena, which is emptied (with the keys) when it
    /// would grow past `arenaLimit`, so memory stays bounded however many addresses are asked.
    package struct ByteCache: ~Copyable {
        /// Per slot: the key + 1 (0: empty), then `offset << 32 | length` of its bytes in `arena`.
        /// Zero-filled by `calloc`, so the pages of slots never used are never touched.
        private let slots: UnsafeMutablePointer<UInt64>
        private let slotCount: Int
        private var arena = OutputBytes(capacity: 1 << 12)
        private let shift: UInt64
        private let arenaLimit: Int

        init(slots: Int, arenaLimit: Int = Int(UInt32.max)) {
            precondition(slots > 0 && slots & (slots - 1) == 0, "slots must be a power of two")
            guard let memory = calloc(2 * slots, MemoryLayout<UInt64>.size) else { fatalError("out of memory") }
            self.slots = memory.assumingMemoryBound(to: UInt64.self)
            slotCount = slots
            shift = UInt64(64 - slots.trailingZeroBitCount)
            self.arenaLimit = arenaLimit
        }

        deinit { free(slots) }

        @inline(__always)
        private func slot(_ key: UInt64) -> Int {
            Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
        }

        /// Appends the bytes cached for `key` to `output`; false when there are none.
        @inline(__always)
        func append(_ key: UInt64, to output: inout OutputBytes) -> Bool {
            let slot = slot(key)
            guard slots[2 * slot] == key &+ 1 else { return false }
            let span = slots[2 * slot + 1]
            let offset = Int(span >> 32)
            output.append(arena.bytes(offset..<(offset + Int(span & 0xffff_ffff))))
            return true
        }

        /// A cache of 2^12 slots (the drop-in renderers' size).
        package init() { self.init(slots: 1 << 12) }

        /// A copy of the bytes cached for `key`, nil when there are none.
        package func value(_ key: UInt64) -> [UInt8]? {
            let slot = slot(key)
            guard slots[2 * slot] == key &+ 1 else { return nil }
            let span = slots[2 * slot + 1]
            let offset = Int(span >> 32)
            return Array(arena.bytes(offset..<(offset + Int(span & 0xffff_ffff))))
        }

        /// Caches `bytes` for `key`.
        package mutating func store(_ key: UInt64, _ bytes: [UInt8]) {
            bytes.withUnsafeBytes { store(key, $0) }
        }

        /// Caches `bytes` for `key`.
        mutating func store(_ key: UInt64, _ bytes: UnsafeRawBufferPointer) {
            if arena.count + bytes.count > arenaLimit {
                // Start over rather than grow: old entries are as likely to be asked again as new ones.
                arena.removeAll()
                slots.update(repeating: 0, count: 2 * slotCount)
                guard bytes.count <= arenaLimit else { return }
            }
            let slot = slot(key)
            slots[2 * slot] = key &+ 1
            slots[2 * slot + 1] = UInt64(arena.count) << 32 | UInt64(bytes.count)
            arena.append(bytes)
        }
    }

    /// The printed function names, JSON-escaped stored names and joined paths of one table's
    /// records for one style, each rendered (and demangled) once per process, however many threads
    /// answer: every renderer made from it reads and adds to the same entries, without a lock.
    ///
    /// An entry is a length and its bytes in a chunk that a renderer filled and that is never
    /// moved or freed while the strings live; a record's slot holds the entry's address, published
    /// with a release store once its bytes are written, so a reader that sees the address (an
    /// acquire load) sees the bytes. An entry whose bytes are the stored string itself (a name
    /// printed as stored and needing no escape) is not copied: its slot holds the string's
    /// offset in the table and its length instead (with the sign bit set, which no address has),
    /// and the strings keep the table alive. Two threads rendering the same record at once both publish:
    /// either entry is right, the other's bytes are only wasted. Slots are zero-filled mappings (pages of
    /// records never asked are never touched: a one-address run pays for what it asks; a run of many
    /// addresses maps them all at once, `prefault()`).
    // Audited: the slots are only read and written atomically, an entry's bytes are written before
    // its address is published and never after, and the chunk list is behind a mutex.
    public final class RenderedStrings: @unchecked Sendable {
        /// What an entry renders.
        enum Kind: Int {
            /// Function names, demangled unless not asked, escaped for the style.
            case function = 0
            /// Stored (mangled) names escaped for JSON (JSON style only).
            case mangled = 1
            /// Joined source paths, escaped for the style.
            case path = 2
        }

        /// The style and naming every renderer from these strings uses.
        let style: Style
        let demangles: Bool
        /// The slots of all three kinds, one after the other: functions, mangled names, paths.
        private let slots: UnsafeMutablePointer<Atomic<Int>>
        private let slotBytes: Int
        private let functionCount: Int
        private let mangledCount: Int
        private let pathCount: Int
        /// The memory chunks are cut from, unmapped with the strings.
        private let regions = Mutex(Regions())
        /// The table whose strings in-place entries point into (kept alive with them), its bytes'
        /// first address and their count.
        private let table: SymbolTable
        private let tableBase: UnsafeRawPointer?
        private let tableSize: Int
        /// In-place entries: the sign bit, the length (`inPlaceLengthBits`), then the offset in
        /// the table (`inPlaceOffsetBits`).
        static let inPlaceOffsetBits = 40
        static let inPlaceLengthBits = 23

        /// Room for the records of `table`, for renderers of `style` (demangling names unless
        /// `demangles` is false).
        public init(table: SymbolTable, style: Style, demangles: Bool = true) {
            self.style = style
            self.demangles = demangles
            self.table = table
            tableBase = table.baseAddress
            tableSize = table.byteCount
            let statistics = table.statistics
            functionCount = statistics.names
            mangledCount = style == .json ? statistics.names : 0
            pathCount = statistics.files
            let total = max(1, functionCount + mangledCount + pathCount)
            slotBytes = total * MemoryLayout<Int>.stride
            // Mapped, not `calloc`'ed, so that `prefault()` can ask for the pages by their bounds.
            guard let memory = mmap(nil, slotBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                  memory != MAP_FAILED else { fatalError("out of memory") }
            // A zero-filled word is a valid `Atomic<Int>` holding 0 (its layout is the integer's).
            slots = memory.bindMemory(to: Atomic<Int>.self, capacity: total)
        }

        /// Makes the slots' pages present and writable at once, for a run of many addresses on
        /// several threads. Otherwise a slot page read before any of its slots is published
        /// (renderers look entries up before they render) maps the shared zero page, and the first
        /// publish into it must replace that mapping, which interrupts every other thread of the
        /// process to flush its TLB: on a Swift lookup, about 2% of the CPU time.
        public func prefault() {
            WritablePages.populate(UnsafeMutableRawPointer(slots), count: slotBytes)
        }

        deinit {
            munmap(UnsafeMutableRawPointer(slots), slotBytes)
            regions.withLock { regions in
                for mapping in regions.mappings { munmap(UnsafeMutableRawPointer(bitPattern: mapping.address), mapping.size) }
            }
        }

        /// The slot of record `key` of `kind`, nil for a record past the table's.
        @inline(__always)
        private func slot(_ kind: Kind, _ key: UInt32) -> UnsafeMutablePointer<Atomic<Int>>? {
            let index = Int(key)
            switch kind {
            case .function: return index < functionCount ? slots + index : nil
            case .mangled: return index < mangledCount ? slots + functionCount + index : nil
            case .path: return index < pathCount ? slots + functionCount + mangledCount + index : nil
            }
        }

        /// The bytes rendered for record `key` of `kind`, nil when none are yet.
        @inline(__always)
        func entry(_ kind: Kind, _ key: UInt32) -> UnsafeRawBufferPointer? {
            guard let slot = slot(kind, key) else { return nil }
            let address = slot.pointee.load(ordering: .acquiring)
            if address < 0 {
                // In place: published only where `tableBase` is not nil.
                let word = UInt64(bitPattern: Int64(address))
                let offset = Int(truncatingIfNeeded: word & (1 << Self.inPlaceOffsetBits - 1))
                let count = Int(truncatingIfNeeded: (word >> Self.inPlaceOffsetBits) & (1 << Self.inPlaceLengthBits - 1))
                return UnsafeRawBufferPointer(start: tableBase.unsafelyUnwrapped + offset, count: count)
            }
            guard let entry = UnsafeRawPointer(bitPattern: address) else { return nil }
            return UnsafeRawBufferPointer(start: entry + 4, count: Int(entry.loadUnaligned(as: UInt32.self)))
        }

        /// Publishes `bytes` in place for record `key` of `kind` when they lie in the table and
        /// fit an in-place entry; false (nothing published) otherwise.
        @inline(__always)
        func publishInPlace(_ kind: Kind, _ key: UInt32, _ bytes: UnsafeRawBufferPointer) -> Bool {
            guard let slot = slot(kind, key), let base = tableBase, let start = bytes.baseAddress,
                  start >= base, bytes.count < 1 << Self.inPlaceLengthBits else { return false }
            let offset = start - base
            guard offset < 1 << Self.inPlaceOffsetBits, offset + bytes.count <= tableSize else { return false }
            let word = 1 << 63 | UInt64(bytes.count) << Self.inPlaceOffsetBits | UInt64(offset)
            slot.pointee.store(Int(Int64(bitPattern: word)), ordering: .releasing)
            return true
        }

        /// Publishes the entry at `entry` (a length, then its bytes, in a chunk of these strings)
        /// for record `key` of `kind` (nothing for a record past the table's).
        @inline(__always)
        func publish(_ kind: Kind, _ key: UInt32, _ entry: UnsafeRawPointer) {
            slot(kind, key)?.pointee.store(Int(bitPattern: entry), ordering: .releasing)
        }

        /// Whether record `key` of `kind` can hold an entry.
        @inline(__always)
        func holds(_ kind: Kind, _ key: UInt32) -> Bool { slot(kind, key) != nil }

        /// Chunks handed out until now.
        var chunkCount: Int { regions.withLock { $0.chunks } }

        /// A chunk of at least `bytes` bytes, owned (and freed) by these strings.
        func newChunk(_ bytes: Int) -> UnsafeMutableRawPointer {
            regions.withLock { regions in regions.chunk(bytes) }
        }

        /// Memory mapped for chunks, in regions of ordinary pages touched only as they are filled
        /// (a one-address run faults in a page or two). Not huge pages, although a big Swift
        /// lookup renders 13 MB of demangled names and huge pages cut the CPU of its faults to a
        /// quarter when the memory is warm: on a virtual machine whose host takes freed memory
        /// back (free page reporting, which hands the host free 2 MB blocks, exactly what a huge
        /// page is made of), a huge page's first touch waits for the host. Measured on this
        /// project's machine right after another tool exited: 16 MB took 20-50 ms to touch in huge
        /// pages and 7-10 ms in 4 KiB pages; the swift-format lookup's median went 53 → 42 ms.
        struct Regions {
            /// Every mapping, for `munmap`.
            var mappings: [(address: Int, size: Int)] = []
            /// The unused part of the newest region.
            var free = 0
            var end = 0
            /// Chunks handed out (statistics and tests).
            var chunks = 0

            /// Bytes of a region (at least: a larger chunk gets a region its size).
            static let regionSize = 4 << 20

            /// A chunk of `bytes` bytes from the newest region, mapping a new one when it has too
            /// little room left.
            mutating func chunk(_ bytes: Int) -> UnsafeMutableRawPointer {
                if end - free < bytes {
                    let size = max(Self.regionSize, bytes)
                    guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                          mapped != MAP_FAILED else { fatalError("out of memory") }
                    mappings.append((Int(bitPattern: mapped), size))
                    free = Int(bitPattern: mapped)
                    end = free + size
                }
                let chunk = free
                free += bytes
                chunks += 1
                return UnsafeMutableRawPointer(bitPattern: chunk)!
            }
        }
    }

    /// Bytes of a renderer's chunks (larger entries get a chunk of their own).
    static let chunkSize = 1 << 18

    /// Creates a renderer for one table; with `demangles` false, function names are printed as
    /// stored (mangled), as `llvm-symbolizer --no-demangle` prints them.
    public init(table: SymbolTable, style: Style, demangles: Bool = true) {
        self.init(table: table, strings: RenderedStrings(table: table, style: style, demangles: demangles))
    }

    /// Creates a renderer that shares `strings` (made for `table`) with other renderers, on any
    /// threads: a name one of them rendered, the others do not render again.
    public init(table: SymbolTable, strings: RenderedStrings) {
        self.table = table
        self.style = strings.style
        self.demangles = strings.demangles
        self.strings = strings
    }

    /// Whether an input line holds only blanks (spaces, tabs, a carriage return): such a line is
    /// skipped, not reported as a bad address.
    public static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }
    }

    /// Appends the answer for `address` to `output`.
    public mutating func render(_ address: UInt64, into output: inout OutputBytes) throws(FormatError) {
        try render(address, range: table.rangeIndex(containing: address) ?? -1, into: &output)
    }

    /// Appends the answers for `addresses`, in order, with their ranges found in one batch (see
    /// `SymbolTable.rangeIndices`: several times faster per address than one at a time). An
    /// address whose frames cannot be read (a corrupt table) gets no answer; the errors are
    /// returned, and the others are answered all the same.
    public mutating func render(_ addresses: UnsafeBufferPointer<UInt64>, into output: inout OutputBytes) -> [FormatError] {
        var errors: [FormatError] = []
        // Held once for the batch, not retained per name: other threads share these objects, and
        // their reference counts would bounce between the cores.
        let table = self.table, strings = self.strings
        withUnsafeTemporaryAllocation(of: Int.self, capacity: addresses.count) { ranges in
            table.rangeIndices(addresses, into: ranges)
            // The chains are read ahead a slice at a time, so they are still in cache when walked.
            var start = 0
            while start < addresses.count {
                let end = min(addresses.count, start + Self.warmSlice)
                // Then the cached names of those frames, likewise all at once.
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: Self.warmSlice * 8) { names in
                    let (checksum, count) = table.warmFrames(ofRanges: UnsafeBufferPointer(rebasing: ranges[start..<end]), names: names)
                    warmth &+= checksum
                    // The names not rendered yet: their strings, read ahead.
                    var unrendered = 0
                    for index in 0..<count {
                        let name = names[index]
                        if let entry = strings.entry(.function, name) {
                            Self.prefetch(entry)
                        } else {
                            names[unrendered] = name
                            unrendered += 1
                        }
                    }
                    if unrendered > 0 { warmth &+= table.warmNames(UnsafeMutableBufferPointer(rebasing: names[0..<unrendered])) }
                }
                for index in start..<end {
                    do throws(FormatError) {
                        try render(addresses[index], range: ranges[index], into: &output)
                    } catch {
                        errors.append(error)
                    }
                }
                start = end
            }
        }
        return errors
    }

    /// Starts loading every cache line of `bytes` (a rendered name is copied into the output
    /// soon after: a demangled Swift name spans several lines, and they are scattered over
    /// megabytes of entries, so waiting for each in turn would dominate the copy).
    @inline(__always)
    static func prefetch(_ bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return }
        var line = UInt(bitPattern: start) & ~63
        let last = UInt(bitPattern: start + (bytes.count - 1))
        while line <= last {
            crashsym_prefetch(UnsafeRawPointer(bitPattern: line))
            line &+= 64
        }
    }

    /// Addresses whose inline chains are read ahead at once (see `SymbolTable.warmFrames`).
    static let warmSlice = 64

    /// Appends the answer for `address`, in range `range` (-1: none, or a range without frames).
    private mutating func render(_ address: UInt64, range: Int, into output: inout OutputBytes) throws(FormatError) {
        switch style {
        case .text:
            output.append(Literal.hexPrefix)
            output.appendHex(address)
            output.append(UInt8(ascii: "\n"))
        case .json:
            output.append(Literal.jsonAddress)
            output.appendHex(address)
            output.append(Literal.jsonFrames)
        }
        if range >= 0 {
            try renderFrames(range: range, into: &output)
        } else if style == .text {
            output.append(Literal.noFrames)
        }
        if style == .json { output.append(Literal.jsonEnd) }
    }

    /// Appends the answer for `address` to `output` (a convenience over `render(_:into:)` with an
    /// `OutputBytes`, for callers that want an array).
    public mutating func render(_ address: UInt64, into output: inout [UInt8]) throws(FormatError) {
        var buffer = OutputBytes(capacity: 256)
        try render(address, into: &buffer)
        output.append(contentsOf: buffer.bytes)
    }

    /// Appends the frames of range `range` (text: one line per frame, or `??`; JSON: the
    /// comma-separated frame objects).
    private mutating func renderFrames(range: Int, into output: inout OutputBytes) throws(FormatError) {
        // A cursor, not `table.frames(inRange:)`: its iterator would retain the table, whose
        // reference count the threads of a lookup share, once per address.
        var frames = SymbolTable.FrameCursor(range: range)
        guard let innermost = try frames.nextIndices(in: table) else {
            if style == .text { output.append(Literal.noFrames) }
            return
        }
        try renderFrame(innermost, first: true, into: &output)
        while let frame = try frames.nextIndices(in: table) { try renderFrame(frame, first: false, into: &output) }
    }

    /// Appends one frame (text: one line; JSON: the frame object, after a comma unless `first`).
    @inline(__always)
    private mutating func renderFrame(_ frame: SymbolTable.FrameIndices, first: Bool, into output: inout OutputBytes) throws(FormatError) {
        // Indices, not strings: names and paths come from the caches, keyed by record.
        switch style {
        case .text:
            output.append(Literal.indent)
            try appendFunction(frame.name, to: &output)
            let hasFile = try !isEmptyFile(frame.file)
            if frame.line != 0 || hasFile {
                output.append(Literal.gap)
                let before = output.count
                try appendPath(frame.file, to: &output)
                if output.count == before { output.append(Literal.unknown) }
                output.append(UInt8(ascii: ":"))
                output.appendDecimal(UInt64(frame.line))
                if frame.column != 0 {
                    output.append(UInt8(ascii: ":"))
                    output.appendDecimal(UInt64(frame.column))
                }
            }
            if frame.isInlined { output.append(Literal.inlined) }
            if frame.isSymbolOnly { output.append(Literal.symbolOnly) }
            output.append(UInt8(ascii: "\n"))
        case .json:
            if !first { output.append(UInt8(ascii: ",")) }
            output.append(Literal.jsonFunction)
            try appendFunction(frame.name, to: &output)
            output.append(Literal.jsonMangled)
            try appendMangledName(frame.name, to: &output)
            output.append(Literal.jsonFile)
            try appendPath(frame.file, to: &output)
            output.append(Literal.jsonLine)
            output.appendDecimal(UInt64(frame.line))
            output.append(Literal.jsonColumn)
            output.appendDecimal(UInt64(frame.column))
            output.append(frame.isInlined ? Literal.jsonInlinedTrue : Literal.jsonInlinedFalse)
            if frame.isSymbolOnly { output.append(Literal.jsonSymbolOnly) }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Appends the printed name of function-name record `index` (rendered once per record).
    @inline(__always)
    private mutating func appendFunction(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if let entry = strings.entry(.function, index) { return output.append(entry) }
        renderFunction(index, try table.functionName(index), to: &output)
    }

    /// Renders, keeps and appends the printed name of function-name record `index`: demangled
    /// when it looks mangled, `??` when empty.
    private mutating func renderFunction(_ index: UInt32, _ reference: StringRef, to output: inout OutputBytes) {
        let demangler = self.demangler, demangles = self.demangles
        // Appended where the bytes live: `keep` hands back its argument when it keeps nothing.
        table.withUTF8(reference) { raw in
            if raw.isEmpty {
                output.append(keep(.function, index, Self.bytes(Literal.unknown)))
            } else if demangles && Self.mayBeMangled(raw) {
                // Demangled at dump time (the Swift names): read, not demangled again.
                if table.hasStoredDemangledNames && appendStoredName(index, to: &output) { return }
                if demangler.withDemangled(utf8: raw, { output.append(keepEscaped(.function, index, $0)) }) { return }
                // Not demangled: printed as `demangleOrSelf` prints it (a String: invalid UTF-8 repaired).
                var text = String(decoding: raw, as: UTF8.self)
                text.withUTF8 { output.append(keepEscaped(.function, index, UnsafeRawBufferPointer($0))) }
            } else {
                output.append(keepStored(.function, index, raw))
            }
        }
    }

    /// Appends the demangled name of function-name record `index` stored in the table and returns
    /// true; false when it has none. Decompresses the record's block and publishes every name
    /// stored in it that has no entry yet (their neighbours are likely asked next, and the block
    /// costs more to decompress than its names to copy); a corrupt block stores nothing.
    ///
    /// The block is decompressed straight into this renderer's chunk. There each name follows
    /// its length, as an entry does, so a name printed as stored is published where it is,
    /// without a copy; only names that JSON must escape are copied.
    private mutating func appendStoredName(_ index: UInt32, to output: inout OutputBytes) -> Bool {
        let block = Int(index) / table.demangledBlockSize
        guard block != scannedBlock else { return false }
        scannedBlock = block
        guard let compressed = try? table.compressedDemangledNames(inBlockOf: index), compressed.byteCount > 0 else {
            return false
        }
        let target = reserve(compressed.byteCount)
        guard let names = try? scratch.decode(compressed, into: target), names.hasNames else { return false }
        chunk = target + compressed.byteCount
        chunkFree -= compressed.byteCount
        var wanted: UnsafeRawBufferPointer?
        for position in 0..<names.count {
            guard let name = names[position] else { continue }
            let record = names.first + UInt32(position)
            guard record == index || strings.entry(.function, record) == nil else { continue }
            let entry: UnsafeRawBufferPointer
            if Self.entriesAreLittleEndian && (style == .text || !needsJSONEscaping(name)),
               let start = name.baseAddress {
                strings.publish(.function, record, start - 4)
                entry = name
            } else {
                entry = keepEscaped(.function, record, name)
            }
            if record == index { wanted = entry }
        }
        guard let wanted else { return false }
        output.append(wanted)
        return true
    }

    /// Whether an entry's length (a native `UInt32`) reads the same as a stored name's length in
    /// a block (little-endian).
    private static var entriesAreLittleEndian: Bool {
        #if _endian(little)
        return true
        #else
        return false
        #endif
    }

    /// `size` bytes at the free end of this renderer's chunk (a new chunk when the current one
    /// has less room left), not yet taken: the caller moves `chunk` past what it uses.
    private mutating func reserve(_ size: Int) -> UnsafeMutableRawPointer {
        if chunkFree < size {
            let capacity = max(size, Self.chunkSize)
            chunk = strings.newChunk(capacity)
            chunkFree = capacity
        }
        return chunk!
    }

    /// Appends the stored (mangled) name of function-name record `index`, escaped for JSON.
    private mutating func appendMangledName(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if let entry = strings.entry(.mangled, index) { return output.append(entry) }
        let reference = try table.functionName(index)
        table.withUTF8(reference) { raw in output.append(keepStored(.mangled, index, raw)) }
    }

    /// Appends the path of file record `index` (rendered once per record; nothing for an unknown file).
    private mutating func appendPath(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if let entry = strings.entry(.path, index) { return output.append(entry) }
        let (directory, file) = try table.file(index)
        Self.joinedPath(table, directory, file).withUnsafeBytes { output.append(keepEscaped(.path, index, $0)) }
    }

    /// Whether file record `index` names no file (its rendered path is empty when seen before).
    @inline(__always)
    private mutating func isEmptyFile(_ index: UInt32) throws(FormatError) -> Bool {
        if let entry = strings.entry(.path, index) { return entry.isEmpty }
        return try table.file(index).name.isEmpty
    }

    /// `keepEscaped` for a string of the table (`raw`, where the table keeps it): kept in place
    /// when it needs no escaping, without a copy.
    @inline(__always)
    private mutating func keepStored(_ kind: RenderedStrings.Kind, _ key: UInt32, _ raw: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        if (style == .text || !needsJSONEscaping(raw)) && strings.publishInPlace(kind, key, raw) { return raw }
        return keepEscaped(kind, key, raw)
    }

    /// `keep`s `text` escaped for the style; the bytes returned are valid while the strings live.
    private mutating func keepEscaped(_ kind: RenderedStrings.Kind, _ key: UInt32, _ text: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard style == .json, needsJSONEscaping(text) else { return keep(kind, key, text) }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.count + 8)
        appendJSONEscaped(text, to: &escaped)
        // Kept even where `keep` would not keep it, so that the bytes outlive `escaped`.
        return escaped.withUnsafeBytes { keep(kind, key, $0, always: true) }
    }

    /// Copies `bytes` into this renderer's chunk as the entry of record `key` of `kind`, publishes
    /// it, and returns the copy (valid while the strings live). A record past the table's (or bytes
    /// too long for an entry's length) keeps nothing and gets `bytes` back, unless `always`: then
    /// the copy is made but not published.
    private mutating func keep(_ kind: RenderedStrings.Kind, _ key: UInt32, _ bytes: UnsafeRawBufferPointer,
                               always: Bool = false) -> UnsafeRawBufferPointer {
        let publishes = strings.holds(kind, key) && bytes.count <= Int(UInt32.max) - 4
        guard publishes || always else { return bytes }
        let size = 4 + bytes.count
        let entry = reserve(size)
        entry.storeBytes(of: UInt32(truncatingIfNeeded: bytes.count), as: UInt32.self)
        if let source = bytes.baseAddress { (entry + 4).copyMemory(from: source, byteCount: bytes.count) }
        chunk = entry + size
        chunkFree -= size
        if publishes { strings.publish(kind, key, entry) }
        return UnsafeRawBufferPointer(start: entry + 4, count: bytes.count)
    }

    /// The bytes of a static string.
    private static func bytes(_ text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// Whether a name starts like a C++, Swift or Rust mangled name (C names skip the demangler).
    @inline(__always)
    package static func mayBeMangled(_ name: some RandomAccessCollection<UInt8>) -> Bool {
        guard name.count >= 2 else { return false }
        let first = name[name.startIndex], second = name[name.index(after: name.startIndex)]
        if first == UInt8(ascii: "_") {
            return second == UInt8(ascii: "Z") || second == UInt8(ascii: "R") || second == UInt8(ascii: "T")
                || second == UInt8(ascii: "$")
                || (second == UInt8(ascii: "_") && name.count > 2 && name[name.index(name.startIndex, offsetBy: 2)] == UInt8(ascii: "Z"))
        }
        return first == UInt8(ascii: "$")
    }

    /// Output fragments: static strings, so using one costs no lazy initialisation.
    private enum Literal {
        static var hexPrefix: StaticString { "0x" }
        static var indent: StaticString { "    " }
        static var gap: StaticString { "  " }
        static var unknown: StaticString { "??" }
        static var inlined: StaticString { "  (inlined)" }
        static var symbolOnly: StaticString { "  (symbol table only)" }
        static var noFrames: StaticString { "    ??\n" }
        static var jsonAddress: StaticString { "{\"address\":\"0x" }
        static var jsonFrames: StaticString { "\",\"frames\":[" }
        static var jsonFunction: StaticString { "{\"function\":\"" }
        static var jsonMangled: StaticString { "\",\"mangled\":\"" }
        static var jsonFile: StaticString { "\",\"file\":\"" }
        static var jsonLine: StaticString { "\",\"line\":" }
        static var jsonColumn: StaticString { ",\"column\":" }
        static var jsonInlinedTrue: StaticString { ",\"inlined\":true" }
        static var jsonInlinedFalse: StaticString { ",\"inlined\":false" }
        static var jsonSymbolOnly: StaticString { ",\"symbol_only\":true" }
        static var jsonEnd: StaticString { "]}\n" }
    }

    /// The source path of a frame: the file name under its directory unless it is absolute;
    /// empty when the file is unknown (the drop-ins print the same paths).
    package static func joinedPath(_ table: SymbolTable, _ directory: StringRef, _ file: StringRef) -> [UInt8] {
        var name: [UInt8] = [], folder: [UInt8] = []
        table.withUTF8(file) { name = Array($0) }
        table.withUTF8(directory) { folder = Array($0) }
        guard !name.isEmpty else { return [] }
        var joined: [UInt8] = []
        if !folder.isEmpty && name.first != UInt8(ascii: "/") {
            joined = folder
            if folder.last != UInt8(ascii: "/") { joined.append(UInt8(ascii: "/")) }
        }
        joined.append(contentsOf: name)
        return joined
    }

    /// Parses a hex address (`0x` optional) from bytes, ignoring surrounding spaces; nil if invalid.
    public static func parseAddress(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        var start = 0, end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0d) { end -= 1 }
        if end - start >= 2 && bytes[start] == UInt8(ascii: "0") && (bytes[start + 1] | 0x20) == UInt8(ascii: "x") {
            start += 2
        }
        guard end > start, end - start <= 16 else { return nil }
        var value: UInt64 = 0
        for index in start..<end {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}
