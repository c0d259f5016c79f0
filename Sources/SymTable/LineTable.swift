/// Line-table rows grouped in sequences, delta-coded in bytes: about 4-5 bytes a row where a
/// `LineRow` takes 24, so the writer's input for a module with millions of rows stays small.
///
/// Rows keep their model order and every field, end-of-sequence rows included, so the rows can be
/// given back exactly (`rows`). Each sequence is its rows up to and including the row with
/// `isEndSequence`; rows after the last end-of-sequence row are counted (`rowCount`, as the header's
/// statistics count the model's rows) but not kept, as they cover nothing.
///
/// A row is coded as the address difference from the previous row of its sequence (SLEB128, so
/// sequences out of address order code too), the file (ULEB128), the line difference from the
/// previous row (SLEB128) and the column (ULEB128).
///
/// Rows live in chunks, each with an optional map of its file numbers: appending another table's
/// sequences (`append(_:sequences:fileMap:)`, what merging the DWARF reader's per-thread parts
/// does) takes over its bytes as a chunk instead of decoding and coding every row again.
public struct LineTable: Sendable {
    /// Where a sequence's rows are and what they cover.
    struct SequenceInfo {
        /// The chunk holding the rows, and the byte offset of the first row in it.
        var chunk: Int
        var offset: Int
        /// Rows before the end-of-sequence row.
        var bodyCount: Int
        /// The first row's address (in stored order).
        var firstAddress: UInt64
        /// Lowest address of the body rows (the end address when there are none).
        var start: UInt64
        /// The end-of-sequence row's address: one past the last covered byte.
        var end: UInt64
        /// Whether the body rows are in address order (equal addresses allowed).
        var isSorted: Bool
    }

    /// Coded rows, and the model file of each file number they use (empty: the numbers are model files).
    struct Chunk: Sendable {
        var bytes: [UInt8] = []
        var fileMap: [UInt32] = []
        /// The largest file number coded in `bytes`.
        var largestNumber: UInt32 = 0
    }

    private(set) var chunks: [Chunk] = []
    private(set) var sequences: [SequenceInfo] = []
    /// Rows appended, those after the last end-of-sequence row included.
    public private(set) var rowCount = 0
    /// The largest file index of any row appended (0 when none).
    public private(set) var largestFile: UInt32 = 0

    /// Longest coding of one row: SLEB128 of 64 bits, then three 32-bit values (a line difference
    /// takes at most 33 bits).
    private static let maximumRowBytes = 10 + 5 + 5 + 5

    /// Creates an empty table.
    public init() {}

    /// Codes `rows` in model order (see the type's comment).
    public init(_ rows: [LineRow]) {
        var first = 0
        for (index, row) in rows.enumerated() where row.isEndSequence {
            appendSequence(rows[first...index])
            first = index + 1
        }
        for row in rows[first...] { largestFile = max(largestFile, row.file) }
        rowCount += rows.count - first
    }

    /// Number of complete sequences.
    public var sequenceCount: Int { sequences.count }

    /// Bytes of coded rows (statistics, tests).
    public var byteCount: Int { chunks.reduce(0) { $0 + $1.bytes.count } }

    /// Makes room for `count` bytes of coded rows in one allocation.
    public mutating func reserveCapacity(bytes count: Int) {
        ownChunk()
        chunks[chunks.count - 1].bytes.reserveCapacity(count)
    }

    /// The address of sequence `index`'s first row, in stored order.
    public func firstAddress(ofSequence index: Int) -> UInt64 {
        sequences[index].firstAddress
    }

    /// Makes the last chunk one whose file numbers are model files.
    private mutating func ownChunk() {
        if chunks.last.map({ !$0.fileMap.isEmpty }) ?? true { chunks.append(Chunk()) }
    }

    /// Appends one sequence: `rows` must end with its end-of-sequence row, and contain no other.
    public mutating func appendSequence(_ rows: ArraySlice<LineRow>) {
        guard let last = rows.last else { return }
        ownChunk()
        let chunk = chunks.count - 1
        var sequence = SequenceInfo(chunk: chunk, offset: chunks[chunk].bytes.count, bodyCount: rows.count - 1,
                                    firstAddress: rows[rows.startIndex].address, start: .max, end: last.address,
                                    isSorted: true)
        // Coded in place into room for the longest coding, then trimmed: no append per byte.
        var offset = sequence.offset
        // Grown by a quarter, not doubled: less left unused, and less held while the bytes move.
        let room = rows.count * Self.maximumRowBytes
        chunks[chunk].bytes.reserveGrowingByQuarter(room)
        chunks[chunk].bytes.append(contentsOf: repeatElement(0, count: room))
        var largest: UInt32 = 0
        chunks[chunk].bytes.withUnsafeMutableBufferPointer { out in
            rows.withUnsafeBufferPointer { rows in
                var previous = (address: UInt64(0), line: UInt32(0))
                for (index, row) in rows.enumerated() {
                    if index < rows.count - 1 {
                        if index > 0 && row.address < previous.address { sequence.isSorted = false }
                        sequence.start = min(sequence.start, row.address)
                    }
                    largest = max(largest, row.file)
                    LEB128Coding.writeSigned(Int64(bitPattern: row.address &- previous.address), to: out, at: &offset)
                    LEB128Coding.writeUnsigned(UInt64(row.file), to: out, at: &offset)
                    LEB128Coding.writeSigned(Int64(row.line) - Int64(previous.line), to: out, at: &offset)
                    LEB128Coding.writeUnsigned(UInt64(row.column), to: out, at: &offset)
                    previous = (row.address, row.line)
                }
            }
        }
        chunks[chunk].bytes.removeLast(chunks[chunk].bytes.count - offset)
        largestFile = max(largestFile, largest)
        chunks[chunk].largestNumber = max(chunks[chunk].largestNumber, largest)
        if sequence.bodyCount == 0 { sequence.start = sequence.end }
        rowCount += rows.count
        sequences.append(sequence)
    }

    /// Appends the sequences in `ranges` of `other` (a table whose file numbers are its own
    /// producer's), their file numbers mapped through `fileMap` (every number used must have an
    /// entry). The rows are not decoded: `other`'s chunks are taken over as they are.
    public mutating func append(_ other: LineTable, sequences ranges: [Range<Int>], fileMap: [UInt32]) {
        var chunkIndex = [Int](repeating: -1, count: other.chunks.count)
        for range in ranges {
            for index in range {
                var sequence = other.sequences[index]
                if chunkIndex[sequence.chunk] < 0 {
                    var chunk = other.chunks[sequence.chunk]
                    chunk.fileMap = chunk.fileMap.isEmpty ? fileMap : chunk.fileMap.map { fileMap[Int($0)] }
                    // The map may name more than files (the DWARF reader maps all its strings):
                    // only the numbers the rows use count.
                    for number in chunk.fileMap.indices where number <= Int(chunk.largestNumber) {
                        largestFile = max(largestFile, chunk.fileMap[number])
                    }
                    chunkIndex[sequence.chunk] = chunks.count
                    chunks.append(chunk)
                }
                sequence.chunk = chunkIndex[sequence.chunk]
                rowCount += sequence.bodyCount + 1
                sequences.append(sequence)
            }
        }
    }

    /// Every kept row in order, as the model holds them.
    public var rows: [LineRow] {
        var result: [LineRow] = []
        result.reserveCapacity(sequences.reduce(0) { $0 + $1.bodyCount + 1 })
        for index in sequences.indices {
            forEachRow(ofSequence: index) { result.append($0) }
        }
        return result
    }

    /// Calls `body` with each row of sequence `index` in stored order, its end row last.
    public func forEachRow(ofSequence index: Int, _ body: (LineRow) -> Void) {
        var rows = rows(ofSequence: index)
        while let row = rows.next() { body(row) }
    }

    /// The rows of sequence `index` in stored order, its end row last.
    func rows(ofSequence index: Int) -> RowIterator {
        let sequence = sequences[index]
        return RowIterator(chunk: chunks[sequence.chunk], offset: sequence.offset, remaining: sequence.bodyCount + 1)
    }

    /// Decodes the rows of one sequence in stored order. The bytes were coded by this type, so
    /// they are well formed by construction.
    struct RowIterator {
        let chunk: Chunk
        var offset: Int
        var remaining: Int
        var previous = (address: UInt64(0), line: UInt32(0))

        init(chunk: Chunk, offset: Int, remaining: Int) {
            self.chunk = chunk
            self.offset = offset
            self.remaining = remaining
        }

        /// The next row; its `isEndSequence` is set on the sequence's last row.
        mutating func next() -> LineRow? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            var row = chunk.bytes.withUnsafeBufferPointer { bytes in
                let address = previous.address &+ UInt64(bitPattern: LEB128Coding.signed(bytes, &offset))
                let file = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                let line = UInt32(truncatingIfNeeded: Int64(previous.line) &+ LEB128Coding.signed(bytes, &offset))
                let column = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                return LineRow(address: address, file: file, line: line, column: column, isEndSequence: remaining == 0)
            }
            previous = (row.address, row.line)
            if !chunk.fileMap.isEmpty { row.file = chunk.fileMap[Int(row.file)] }
            return row
        }
    }
}
