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
    // The caches are sized from the table (see `slots(for:)`): two slots per record, so that names
    // and paths are rendered about once, and a small table costs a one-address run few page faults.
    /// Demangled names (escaped for the style) by function-name record.
    private var functions: ByteCache
    /// Mangled names escaped for JSON, by function-name record.
    private var mangled: ByteCache
    /// Joined source paths (escaped for the style) by file record.
    private var paths: ByteCache

    /// A direct-mapped cache of rendered bytes keyed by integers (string-table positions, range
    /// indices): cheaper than a `Dictionary` (no SipHash per frame); a collision only costs
    /// re-rendering. Values are slices of one arena, which is emptied (with the keys) when it
    /// would grow past `arenaLimit`, so memory stays bounded however many addresses are asked.
    struct ByteCache: ~Copyable {
        /// Per slot: the key + 1 (0: empty), then `offset << 32 | length` of its bytes in `arena`.
        /// Zero-filled by `calloc`, so the pages of slots never used are never touched: a big
        /// cache costs a one-address run nothing.
        private let slots: UnsafeMutablePointer<UInt64>
        private let slotCount: Int
        private var arena = OutputBytes(capacity: 1 << 12)
        private let shift: UInt64
        private let arenaLimit: Int

        /// Whether keys are dense indices below `slotCount`, each with its own slot.
        private let isDirect: Bool

        init(slots: Int, arenaLimit: Int = Int(UInt32.max)) {
            precondition(slots > 0 && slots & (slots - 1) == 0, "slots must be a power of two")
            guard let memory = calloc(2 * slots, MemoryLayout<UInt64>.size) else { fatalError("out of memory") }
            self.slots = memory.assumingMemoryBound(to: UInt64.self)
            slotCount = slots
            shift = UInt64(64 - slots.trailingZeroBitCount)
            self.arenaLimit = arenaLimit
            isDirect = false
        }

        /// A cache for keys that are record indices below `keys`: one slot per key, so no two keys
        /// collide (a key out of that range still works, sharing a slot).
        init(keys: Int, arenaLimit: Int = Int(UInt32.max)) {
            slotCount = max(1, keys)
            guard let memory = calloc(2 * slotCount, MemoryLayout<UInt64>.size) else { fatalError("out of memory") }
            self.slots = memory.assumingMemoryBound(to: UInt64.self)
            shift = 0
            self.arenaLimit = arenaLimit
            isDirect = true
        }

        deinit { free(slots) }

        @inline(__always)
        private func slot(_ key: UInt64) -> Int {
            if isDirect { return key < UInt64(slotCount) ? Int(key) : Int(key % UInt64(slotCount)) }
            return Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
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

        /// Reads the slot of `key` and the first bytes cached for it (to bring them into cache
        /// ahead of use); returns a value derived from them.
        @inline(__always)
        func touch(_ key: UInt64) -> UInt32 {
            let slot = slot(key)
            guard slots[2 * slot] == key &+ 1 else { return 0 }
            let span = slots[2 * slot + 1]
            guard span & 0xffff_ffff != 0 else { return 1 }
            return UInt32(arena.bytes(Int(span >> 32)..<(Int(span >> 32) + 1))[0])
        }

        /// The length of the bytes cached for `key`, nil when there are none.
        @inline(__always)
        func length(_ key: UInt64) -> Int? {
            let slot = slot(key)
            return slots[2 * slot] == key &+ 1 ? Int(slots[2 * slot + 1] & 0xffff_ffff) : nil
        }

        /// A cache of 2^12 slots (the drop-in renderers' size).
        init() { self.init(slots: 1 << 12) }

        /// A copy of the bytes cached for `key`, nil when there are none.
        func value(_ key: UInt64) -> [UInt8]? {
            let slot = slot(key)
            guard slots[2 * slot] == key &+ 1 else { return nil }
            let span = slots[2 * slot + 1]
            let offset = Int(span >> 32)
            return Array(arena.bytes(offset..<(offset + Int(span & 0xffff_ffff))))
        }

        /// Caches `bytes` for `key`.
        mutating func store(_ key: UInt64, _ bytes: [UInt8]) {
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
            if journals { stored.append(key) }
        }

        /// Whether `store` notes the keys it stores in `stored`, for `storedEntries()`.
        var journals = false
        /// Keys stored since the last `forgetStored()` (when `journals`).
        private(set) var stored: [UInt64] = []

        /// The keys stored since the last `forgetStored()`, with their bytes, appended to `entries`.
        func appendStored(to entries: inout Entries) {
            for key in stored {
                let slot = slot(key)
                guard slots[2 * slot] == key &+ 1 else { continue }  // replaced since
                let span = slots[2 * slot + 1]
                let offset = Int(span >> 32)
                entries.append(key, arena.bytes(offset..<(offset + Int(span & 0xffff_ffff))))
            }
        }

        /// Caches the entries this cache lacks.
        mutating func adopt(_ entries: Entries) {
            entries.bytes.withUnsafeBytes { bytes in
                for entry in entries.spans where length(entry.key) == nil {
                    store(entry.key, UnsafeRawBufferPointer(rebasing: bytes[entry.start..<(entry.start + entry.count)]))
                }
            }
        }

        /// Forgets which keys were stored (not their bytes).
        mutating func forgetStored() { stored.removeAll(keepingCapacity: true) }

        /// Cached entries copied out: all bytes in one array, so handing thousands over costs a
        /// few allocations.
        struct Entries: Sendable {
            var bytes: [UInt8] = []
            var spans: [(key: UInt64, start: Int, count: Int)] = []

            mutating func append(_ key: UInt64, _ value: UnsafeRawBufferPointer) {
                spans.append((key, bytes.count, value.count))
                bytes.append(contentsOf: value)
            }

            mutating func append(_ other: Entries) {
                let base = bytes.count
                bytes += other.bytes
                spans += other.spans.map { ($0.key, $0.start + base, $0.count) }
            }
        }
    }

    /// Names and paths a renderer rendered since it last shared them (see `renderedSinceShared`).
    public struct RenderedNames: Sendable {
        var functions = ByteCache.Entries()
        var mangled = ByteCache.Entries()
        var paths = ByteCache.Entries()

        /// Nothing rendered.
        public init() {}

        /// Adds `other`'s names.
        public mutating func append(_ other: RenderedNames) {
            functions.append(other.functions)
            mangled.append(other.mangled)
            paths.append(other.paths)
        }
    }

    /// The names and paths rendered since the last `forgetShared()`: threads answering parts of
    /// one input, each with its own renderer, hand them to one another (`adopt`) so that a name
    /// is demangled about once between them rather than once by each.
    public func renderedSinceShared() -> RenderedNames {
        var names = RenderedNames()
        functions.appendStored(to: &names.functions)
        mangled.appendStored(to: &names.mangled)
        paths.appendStored(to: &names.paths)
        return names
    }

    /// Caches the names and paths of another renderer of the same table and style.
    public mutating func adopt(_ names: RenderedNames) {
        functions.adopt(names.functions)
        mangled.adopt(names.mangled)
        paths.adopt(names.paths)
    }

    /// Counts everything rendered until now as shared.
    public mutating func forgetShared() {
        functions.forgetStored()
        mangled.forgetStored()
        paths.forgetStored()
    }

    /// Creates a renderer for one table; with `demangles` false, function names are printed as
    /// stored (mangled), as `llvm-symbolizer --no-demangle` prints them.
    public init(table: SymbolTable, style: Style, demangles: Bool = true) {
        self.table = table
        self.style = style
        self.demangles = demangles
        let statistics = table.statistics
        // Keyed by record index: one slot per record, no collisions.
        functions = ByteCache(keys: statistics.names)
        mangled = ByteCache(keys: style == .json ? statistics.names : 1)
        paths = ByteCache(keys: statistics.files)
        functions.journals = true
        mangled.journals = true
        paths.journals = true
    }

    /// Slots of a direct-mapped cache for `records` keys: the power of two at or above twice as
    /// many (few collisions), between 2^6 and 2^16.
    static func slots(for records: Int) -> Int {
        var slots = 1 << 6
        while slots < 2 * records && slots < 1 << 16 { slots <<= 1 }
        return slots
    }

    /// What `answer(line:into:)` did with a line.
    public enum LineOutcome: Sendable {
        /// The answer was appended.
        case answered
        /// The line holds only blanks; nothing was appended.
        case blank
        /// The line is not a hex address; nothing was appended.
        case notAnAddress
    }

    /// Appends the answer for one input line (a hex address, `0x` optional, blanks around it).
    /// Throws `FormatError` on a corrupt table.
    public mutating func answer(line: UnsafeRawBufferPointer, into output: inout OutputBytes) throws(FormatError) -> LineOutcome {
        guard let address = Self.parseAddress(line) else {
            return line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) ? .blank : .notAnAddress
        }
        try render(address, into: &output)
        return .answered
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
                    for index in 0..<count { warmth &+= functions.touch(UInt64(names[index])) }
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
        var frames = table.frames(inRange: range)
        guard let innermost = try frames.nextIndices() else {
            if style == .text { output.append(Literal.noFrames) }
            return
        }
        try renderFrame(innermost, first: true, into: &output)
        while let frame = try frames.nextIndices() { try renderFrame(frame, first: false, into: &output) }
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

    /// Appends the printed name of function-name record `index` (cached by record).
    private mutating func appendFunction(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if functions.append(UInt64(index), to: &output) { return }
        let bytes = function(try table.functionName(index))
        bytes.withUnsafeBytes { functions.store(UInt64(index), $0) }
        output.append(bytes)
    }

    /// Appends the stored (mangled) name of function-name record `index`, escaped for JSON.
    private mutating func appendMangledName(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if mangled.append(UInt64(index), to: &output) { return }
        let bytes = mangledName(try table.functionName(index))
        bytes.withUnsafeBytes { mangled.store(UInt64(index), $0) }
        output.append(bytes)
    }

    /// Appends the path of file record `index` (cached by record; nothing for an unknown file).
    private mutating func appendPath(_ index: UInt32, to output: inout OutputBytes) throws(FormatError) {
        if paths.append(UInt64(index), to: &output) { return }
        let (directory, file) = try table.file(index)
        let bytes = path(directory, file)
        bytes.withUnsafeBytes { paths.store(UInt64(index), $0) }
        output.append(bytes)
    }

    /// Whether file record `index` names no file (its cached path is empty when seen before).
    private mutating func isEmptyFile(_ index: UInt32) throws(FormatError) -> Bool {
        if let length = paths.length(UInt64(index)) { return length == 0 }
        return try table.file(index).name.isEmpty
    }

    /// The name to print for a function: demangled when it looks mangled, `??` when empty.
    private func function(_ reference: StringRef) -> [UInt8] {
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        if raw.isEmpty { return Array("??".utf8) }
        if demangles && Self.mayBeMangled(raw) { return escaped(demangler.demangleOrSelf(String(decoding: raw, as: UTF8.self))) }
        return escaped(raw)
    }

    private func mangledName(_ reference: StringRef) -> [UInt8] {
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        return escaped(raw)
    }

    /// The source path: the file name, joined to its directory unless absolute.
    private func path(_ directory: StringRef, _ file: StringRef) -> [UInt8] {
        var name: [UInt8] = [], folder: [UInt8] = []
        table.withUTF8(file) { name = Array($0) }
        table.withUTF8(directory) { folder = Array($0) }
        var joined: [UInt8] = []
        if !name.isEmpty {
            if !folder.isEmpty && name.first != UInt8(ascii: "/") {
                joined = folder
                if folder.last != UInt8(ascii: "/") { joined.append(UInt8(ascii: "/")) }
            }
            joined.append(contentsOf: name)
        }
        return escaped(joined)
    }

    private func escaped(_ text: String) -> [UInt8] {
        escaped(Array(text.utf8))
    }

    /// Whether a name starts like a C++, Swift or Rust mangled name (C names skip the demangler).
    static func mayBeMangled(_ name: [UInt8]) -> Bool {
        guard name.count >= 2 else { return false }
        let first = name[0], second = name[1]
        if first == UInt8(ascii: "_") {
            return second == UInt8(ascii: "Z") || second == UInt8(ascii: "R") || second == UInt8(ascii: "T")
                || second == UInt8(ascii: "$") || (second == UInt8(ascii: "_") && name.count > 2 && name[2] == UInt8(ascii: "Z"))
        }
        return first == UInt8(ascii: "$")
    }

    private func escaped(_ text: [UInt8]) -> [UInt8] {
        guard style == .json, needsJSONEscaping(text) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 8)
        appendJSONEscaped(text, to: &out)
        return out
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
