import SymBytes
import Synchronization

/// A `.csym` symbol table read in place: opening validates the header and section extents only,
/// and each lookup is a binary search plus a walk of the inline chain, with no allocation.
///
/// Every read is bounds-checked, so a corrupt or hostile table yields `FormatError`, never a trap;
/// inline chains must point strictly backwards, so a walk always ends. See `docs/csym-format.md`.
// Audited: every stored property is immutable or a `Mutex`, and `bytes` points into memory that
// `storage` keeps alive and unchanged for the table's life.
public final class SymbolTable: @unchecked Sendable {
    /// Who keeps the bytes alive.
    private enum Storage: Sendable {
        case mapped(MappedFile)
        case owned(OwnedBytes)
    }

    /// The bytes of a table not read from a file, at an address that never moves: the array is
    /// kept, never mutated, not copied. (A native array's elements live inside its storage
    /// object, which Swift never moves; holding the array keeps that object alive and unchanged.
    /// `crashsym dump` opens each table it writes: a copy would double the table's memory at
    /// the end of the conversion, its peak.)
    private final class OwnedBytes: @unchecked Sendable {
        private let source: ContiguousArray<UInt8>
        /// The array's elements.
        let bytes: UnsafeRawBufferPointer

        init(_ array: [UInt8]) {
            // A `ContiguousArray` is always native storage; converting a native `[UInt8]` to one
            // takes its buffer over without a copy.
            let source = ContiguousArray(array)
            self.source = source
            bytes = source.withUnsafeBytes { $0 }
        }
    }

    private let storage: Storage
    /// The table's bytes, read through directly (no reference counting of `storage` per read:
    /// two threads reading the same table do not write the same counter).
    private let bytes: UnsafeRawBufferPointer
    let layout: TableLayout
    /// The module the table describes.
    public let module: ModuleIdentity
    /// Where each function starts, by name: built on the first `address(ofFunction:offset:)`
    /// (most tables never need it), then kept for the table's life.
    private let functionEntries = Mutex<Result<FunctionEntries, FormatError>?>(nil)

    /// Opens a table over a memory-mapped file, which stays mapped while the table lives.
    public convenience init(file: MappedFile) throws(FormatError) {
        do {
            try self.init(storage: .mapped(file))
        } catch {
            throw error.at(path: file.path)
        }
    }

    /// Opens a table over `bytes` (kept, not copied).
    public convenience init(bytes: [UInt8]) throws(FormatError) {
        try self.init(storage: .owned(OwnedBytes(bytes)))
    }

    private init(storage: Storage) throws(FormatError) {
        let bytes: UnsafeRawBufferPointer
        switch storage {
        case .mapped(let file): bytes = file.bytes
        case .owned(let owned): bytes = owned.bytes
        }
        let (layout, module) = try { () throws(FormatError) in
            let reader = ByteReader(bytes)
            let layout = try TableLayout(reader)
            let name = try layout.string(reader, at: layout.moduleName)
            let buildID = try reader.slice(layout[.buildID].offset, layout[.buildID].size, "build-id")
            let module = ModuleIdentity(
                buildID: Array(buildID), machine: layout.machine, is64Bit: layout.is64Bit,
                name: Self.decode(name, in: reader, layout: layout),
                layout: try ModuleLayout.decode(reader, offset: layout.moduleLayout.offset, size: layout.moduleLayout.size))
            return (layout, module)
        }()
        self.storage = storage
        self.bytes = bytes
        self.layout = layout
        self.module = module
    }

    /// Counts describing the table.
    public var statistics: Statistics {
        Statistics(
            functions: layout.functionCount, inlinedScopes: layout.inlinedScopeCount,
            lineRows: layout.lineRowCount, symbols: layout.symbolCount,
            ranges: layout.rangeCount, scopeRecords: layout.scopeCount, sourceLocations: layout.callSiteCount,
            files: layout.fileCount, names: layout.nameCount, strings: layout.stringCount,
            byteCount: byteCount)
    }

    /// Size of the table in bytes.
    public var byteCount: Int { bytes.count }

    /// Calls `body` for each frame covering `address`, innermost first, physical function last;
    /// no allocation. Returns the number of frames (0 when the address is in no function).
    /// Throws `FormatError` on a corrupt table.
    @discardableResult
    public func forEachFrame(at address: UInt64, _ body: (Frame) throws(FormatError) -> Void) throws(FormatError) -> Int {
        guard let range = rangeIndex(containing: address) else { return 0 }
        return try forEachFrame(inRange: range, body)
    }

    /// The index of the range containing `address`, nil when the address is below the first range.
    ///
    /// Every address in one range has the same frames, so callers may key caches of rendered
    /// answers on it; `frames(inRange:)` walks them.
    public func rangeIndex(containing address: UInt64) -> Int? {
        withBytes { bytes in layout.fastRangeIndex(bytes, containing: address) }
    }

    /// The range index of each of `addresses` (as `rangeIndex(containing:)`; -1 when there is none
    /// or the range has no frames) written to `result`, which must hold as many. Faster per address
    /// than one search at a time: the searches overlap their memory reads, and the ranges' records
    /// are left in cache for `frames(inRange:)`.
    public func rangeIndices(_ addresses: UnsafeBufferPointer<UInt64>, into result: UnsafeMutableBufferPointer<Int>) {
        withBytes { bytes in layout.fastRangeIndices(bytes, addresses, into: result) }
    }

    /// Reads ahead the inline-chain records of `ranges` (from `rangeIndices`; -1 skipped), all
    /// chains one level at a time so their cache misses overlap: walking their frames right after
    /// is then much cheaper. A hint: it reads within bounds and never fails. Returns a checksum
    /// of the values read, which the caller keeps (in its own state) so that the reads are not
    /// optimised away. The frames' function-name records are written to `names` (as many as fit),
    /// their count returned with the checksum.
    public func warmFrames(ofRanges ranges: UnsafeBufferPointer<Int>,
                           names: UnsafeMutableBufferPointer<UInt32>) -> (checksum: UInt32, names: Int) {
        guard !ranges.isEmpty else { return (0, 0) }
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: ranges.count) { scratch in
            withBytes { bytes in
                var count = 0
                let checksum = layout.warmFrames(bytes, ranges: ranges, scratch: scratch, names: names, nameCount: &count)
                return (checksum, count)
            }
        }
    }

    /// Reads ahead the strings of function-name records `names` (from `warmFrames`), all at once so
    /// that their cache misses overlap: reading them right after is then cheaper. A hint: it reads
    /// within bounds and never fails; `names` is overwritten. Returns a checksum of the bytes read,
    /// which the caller keeps so that the reads are not optimised away.
    public func warmNames(_ names: UnsafeMutableBufferPointer<UInt32>) -> UInt32 {
        withBytes { bytes in layout.warmNames(bytes, names) }
    }

    /// Calls `body` for each frame of range `index` (from `rangeIndex(containing:)`), as
    /// `forEachFrame(at:)` does for an address in it; throws on an index out of bounds.
    @discardableResult
    public func forEachFrame(inRange index: Int, _ body: (Frame) throws(FormatError) -> Void) throws(FormatError) -> Int {
        var frames = frames(inRange: index)
        var count = 0
        while let frame = try frames.next() {
            try body(frame)
            count += 1
        }
        return count
    }

    /// The frames of range `index` (from `rangeIndex(containing:)`), innermost first, one per
    /// `next()` call; no allocation.
    public func frames(inRange index: Int) -> FrameIterator {
        FrameIterator(table: self, range: index)
    }

    /// Walks the inline chain of one range: the range record, its scope record, then call-site
    /// records towards the physical function.
    public struct FrameIterator {
        private let table: SymbolTable
        private var cursor: FrameCursor

        init(table: SymbolTable, range: Int) {
            self.table = table
            cursor = FrameCursor(range: range)
        }

        /// The next frame, nil after the physical function (or at once for a range without frames).
        /// Throws `FormatError` on a corrupt table.
        public mutating func next() throws(FormatError) -> Frame? {
            guard let frame = try nextIndices() else { return nil }
            let (directory, file) = try table.file(frame.file)
            let function = try table.functionName(frame.name)
            return Frame(function: function, directory: directory, file: file,
                         line: frame.line, column: frame.column, isInlined: frame.isInlined,
                         isSymbolOnly: frame.isSymbolOnly,
                         scopeFunction: frame.scopeName == frame.name ? function : try table.functionName(frame.scopeName))
        }

        /// The next frame as table indices, strings not yet resolved (`functionName(_:)`,
        /// `file(_:)` do that, and throw for an index out of bounds): a caller that caches what it
        /// renders per index reads no string data for the frames it has seen.
        public mutating func nextIndices() throws(FormatError) -> FrameIndices? {
            try cursor.nextIndices(in: table)
        }
    }

    /// Where a walk of one range's inline chain is (what `FrameIterator` walks with), without
    /// the table: hot loops that hold the table already pass it to each step, so that walking a
    /// chain does not retain and release the table, whose reference count all threads share.
    public struct FrameCursor: Sendable {
        private let range: Int
        /// The next frame's record; nil before the first step.
        private var record: FrameRecord?
        private var physicalName: UInt32 = 0
        /// Index of `record` among the call sites; the range record is none.
        private var callSite = Int.max
        private var done = false

        /// A walk of the chain of range `range` (from `rangeIndex(containing:)`), not yet started.
        public init(range: Int) {
            self.range = range
        }

        /// The next frame of the chain in `table` (the table the range is of) as indices, as
        /// `FrameIterator.nextIndices()` returns it.
        public mutating func nextIndices(in table: SymbolTable) throws(FormatError) -> FrameIndices? {
            guard !done else { return nil }
            return try table.withBytes { bytes throws(FormatError) -> FrameIndices? in
                let current: FrameRecord
                if let record {
                    guard record.caller >= TableFormat.callerBias else {
                        done = true
                        return nil
                    }
                    let caller = Int(record.caller - TableFormat.callerBias)
                    // Callers are written before their callees: requiring a smaller index makes every
                    // chain finite, whatever the bytes say.
                    guard caller < callSite else {
                        done = true
                        throw FormatError(.invalidValue, "call-site record \(callSite) is inlined into \(caller), which is not before it")
                    }
                    current = try table.layout.callSite(bytes, caller)
                    callSite = caller
                    guard current.caller != TableFormat.callerSymbolOnly else {
                        done = true
                        throw FormatError(.invalidValue, "call-site record \(callSite) is marked symbol-only")
                    }
                } else {
                    let (location, scopeField) = try table.layout.rangeRecord(bytes, range)
                    guard scopeField != 0 else {
                        done = true
                        return nil
                    }
                    let scope = try table.layout.scopeRecord(bytes, Int(scopeField - 1))
                    // The innermost frame: the range's position in the scope record's function.
                    var innermost = location
                    innermost.name = scope.name
                    innermost.caller = scope.caller
                    physicalName = scope.physicalName
                    current = innermost
                }
                record = current
                // The physical frame shows the covering ELF symbol's name when there is one.
                let name = current.caller == TableFormat.callerNone && physicalName != 0 ? physicalName - 1 : current.name
                return FrameIndices(name: name, file: current.file, line: current.line, column: current.column,
                                    isInlined: current.caller >= TableFormat.callerBias,
                                    isSymbolOnly: current.caller == TableFormat.callerSymbolOnly,
                                    scopeName: current.name)
            }
        }
    }

    /// One frame as table indices (see `FrameIterator.nextIndices()`).
    public struct FrameIndices: Sendable, Equatable {
        /// Function-name record; resolve with `functionName(_:)`.
        public var name: UInt32
        /// File record; resolve with `file(_:)`.
        public var file: UInt32
        /// Line (0 when unknown).
        public var line: UInt32
        /// Column (0 when unknown).
        public var column: UInt32
        /// Whether this frame was inlined into the next one.
        public var isInlined: Bool
        /// Whether the name comes from the ELF symbol table only.
        public var isSymbolOnly: Bool
        /// The frame's own scope name (function-name record): the DWARF function's, which `name`
        /// replaces on the physical frame by the covering ELF symbol's when that is another
        /// (equal to `name` otherwise, and on symbol-only frames).
        public var scopeName: UInt32
    }

    /// The name of function-name record `index`; throws when it is out of bounds.
    public func functionName(_ index: UInt32) throws(FormatError) -> StringRef {
        try withBytes { bytes throws(FormatError) in try layout.fastFunctionName(bytes, index) }
    }

    /// The directory and name of file record `index`; throws when it is out of bounds.
    public func file(_ index: UInt32) throws(FormatError) -> (directory: StringRef, name: StringRef) {
        try withBytes { bytes throws(FormatError) in try layout.fastFile(bytes, index) }
    }

    /// The frames covering `address`, innermost first (allocates; `forEachFrame` does not).
    public func frames(at address: UInt64) throws(FormatError) -> [Frame] {
        var frames: [Frame] = []
        try forEachFrame(at: address) { frame in frames.append(frame) }
        return frames
    }

    /// The address range `[start, end)` of the table range containing `address` and whether it has
    /// frames; `end` is nil for the last range, which runs to the end of the address space.
    public func range(containing address: UInt64) throws(FormatError) -> (start: UInt64, end: UInt64?, hasFrames: Bool)? {
        try withBytes { bytes throws(FormatError) in
            let reader = ByteReader(bytes)
            guard let index = try layout.rangeIndex(reader, containing: address) else { return nil }
            let start = try layout.rangeStart(reader, index)
            let end = index + 1 < layout.rangeCount ? try layout.rangeStart(reader, index + 1) : nil
            return (start, end, try layout.rangeRecord(bytes, index).scope != 0)
        }
    }

    /// The address `offset` bytes into the function named `name` (mangled, as the table stores
    /// it): how a `func+0x…` frame of a glibc backtrace is placed from the table alone.
    ///
    /// A function is a run of ranges whose physical frame has that name (the covering ELF
    /// symbol's, else the DWARF function's); the answer is the one run of the name that reaches
    /// `start + offset` (or ends there: a return address after a call that ends the function).
    /// With `loadedAt`, the frame's absolute pc, only a run whose address has the pc's low 12 bits
    /// is taken: a module is mapped at a page-aligned bias, so this rejects another function's
    /// run that happens to bear the name (a cold part named by its DWARF function while the
    /// function's own name is an alias the table dropped: glibc's `strfroml`). Nil when the
    /// table has no such function, or several that qualify (two static functions of one name).
    /// The index behind it is built by the first call, in one pass over the table, and kept;
    /// later calls are a binary search. Throws `FormatError` when the table is corrupt (every
    /// later call throws the same).
    public func address(ofFunction name: String, offset: UInt64, loadedAt pc: UInt64? = nil) throws(FormatError) -> UInt64? {
        let entries = try functionEntries.withLock { (entries) throws(FormatError) -> FunctionEntries in
            if entries == nil {
                entries = withBytes { bytes in Result { () throws(FormatError) in try FunctionEntries(layout, bytes) } }
            }
            return try entries.unsafelyUnwrapped.get()
        }
        return try withBytes { (bytes) throws(FormatError) -> UInt64? in
            try entries.address(of: Array(name.utf8), offset: offset, pageOffset: pc.map { $0 & 0xfff }, layout, bytes)
        }
    }

    /// The string `ref` refers to (empty when `ref` is not from this table).
    public func string(_ ref: StringRef) -> String {
        var text = ""
        withUTF8(ref) { bytes in text = String(decoding: bytes, as: UTF8.self) }
        return text
    }

    /// Calls `body` with the UTF-8 bytes of `ref`, without allocating (empty when `ref` is not
    /// from this table).
    public func withUTF8(_ ref: StringRef, _ body: (UnsafeRawBufferPointer) -> Void) {
        withBytes { bytes in
            guard layout.contains(ref) else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            let start = layout.strings.offset + Int(ref.offset)
            body(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(ref.length))]))
        }
    }

    /// The address of the table's first byte (nil for an empty table). The bytes never move
    /// while the table lives: `withUTF8`'s bytes stay valid as long as the table.
    public var baseAddress: UnsafeRawPointer? { bytes.baseAddress }

    @inline(__always)
    func withBytes<Value, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        try body(bytes)
    }

    private static func decode(_ ref: StringRef, in reader: ByteReader, layout: TableLayout) -> String {
        let start = layout.strings.offset + Int(ref.offset)
        return String(decoding: UnsafeRawBufferPointer(rebasing: reader.bytes[start..<(start + Int(ref.length))]), as: UTF8.self)
    }
}
