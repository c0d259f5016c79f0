/// The ranges a table is built from, in address order, coded in bytes as they are collected:
/// about 6-8 bytes a range instead of 24 for a start and a record of four `UInt32`s, since a big
/// module has millions of ranges and they are all held until the table is encoded.
///
/// A range is coded as its start's distance from the previous start (ULEB128; starts strictly
/// increase), then the file (ULEB128), the line's difference from the previous range's line
/// (SLEB128), the column (ULEB128) and the scope field's difference from the previous range's
/// (SLEB128: scope records are mostly made in address order, so neighbours' are close).
struct RangeList {
    /// The innermost frame's position and the scope field (0 = no frames, else scope record
    /// index + 1).
    struct Record: Equatable {
        var file: UInt32
        var line: UInt32
        var column: UInt32
        var scope: UInt32
    }

    private var bytes: [UInt8] = []
    /// Number of ranges.
    private(set) var count = 0
    /// The first and the last range's start (0 when empty).
    private(set) var firstStart: UInt64 = 0
    private(set) var lastStart: UInt64 = 0
    /// The last range's record.
    private(set) var last: Record?
    /// The largest value of each field.
    private(set) var largest = Record(file: 0, line: 0, column: 0, scope: 0)

    var isEmpty: Bool { count == 0 }

    /// Makes room for `count` more bytes of coded ranges in one allocation.
    mutating func reserveCapacity(bytes count: Int) {
        bytes.reserveCapacity(bytes.count + count)
    }

    /// Appends a range; `start` must be above the last range's.
    mutating func append(start: UInt64, _ record: Record) {
        precondition(count == 0 || start > lastStart, "ranges out of address order")
        if count == 0 { firstStart = start }
        LEB128Coding.appendUnsigned(start - (count == 0 ? 0 : lastStart), to: &bytes)
        LEB128Coding.appendUnsigned(UInt64(record.file), to: &bytes)
        LEB128Coding.appendSigned(Int64(record.line) - Int64(last?.line ?? 0), to: &bytes)
        LEB128Coding.appendUnsigned(UInt64(record.column), to: &bytes)
        LEB128Coding.appendSigned(Int64(record.scope) - Int64(last?.scope ?? 0), to: &bytes)
        lastStart = start
        last = record
        count += 1
        largest = Record(file: max(largest.file, record.file), line: max(largest.line, record.line),
                         column: max(largest.column, record.column), scope: max(largest.scope, record.scope))
    }

    /// Calls `body` with every range in address order.
    func forEach(_ body: (UInt64, Record) -> Void) {
        bytes.withUnsafeBufferPointer { bytes in
            var offset = 0
            var start: UInt64 = 0
            var line: UInt32 = 0
            var scope: UInt32 = 0
            for _ in 0..<count {
                start &+= LEB128Coding.unsigned(bytes, &offset)
                let file = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                line = UInt32(truncatingIfNeeded: Int64(line) &+ LEB128Coding.signed(bytes, &offset))
                let column = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                scope = UInt32(truncatingIfNeeded: Int64(scope) &+ LEB128Coding.signed(bytes, &offset))
                body(start, Record(file: file, line: line, column: column, scope: scope))
            }
        }
    }
}
