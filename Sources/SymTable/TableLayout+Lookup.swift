import SymBytes

/// The lookup hot path: the same reads as `TableLayout`'s `ByteReader` methods, without a bounds
/// check per field.
///
/// `init` proved that every section lies inside the table and is exactly its count times its
/// record size, so a record index checked against its count is a proof that every field of the
/// record is in bounds: each method checks the index (and string offsets against the string data)
/// and then loads unchecked. A hostile table still gets an error, never a read out of bounds.
extension TableLayout {
    /// Loads a little-endian field of `width` (0...4) bytes at `offset`, which the caller proved in bounds.
    @inline(__always)
    static func load(_ bytes: UnsafeRawBufferPointer, _ offset: Int, width: Int) -> UInt32 {
        switch width {
        case 0: return 0
        case 1: return UInt32(bytes.load(fromByteOffset: offset, as: UInt8.self))
        case 2: return UInt32(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        case 3:
            return UInt32(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
                | UInt32(bytes.load(fromByteOffset: offset + 2, as: UInt8.self)) << 16
        default: return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
    }

    /// The index of the range containing `address` (the last with start <= address), if any.
    ///
    /// A branch-free binary search (the probe depends on a conditional move, not a jump), which
    /// keeps random lookups from stalling on mispredicted branches; an unsorted (hostile) array
    /// still ends after log2(n) probes at an index in bounds.
    @inline(__always)
    func fastRangeIndex(_ bytes: UnsafeRawBufferPointer, containing address: UInt64) -> Int? {
        guard rangeCount > 0 else { return nil }
        let starts = rangeStarts.offset
        var low = 0
        var length = rangeCount
        if hasCompactRangeStarts {
            guard address >= addressBase else { return nil }
            // Compare in delta space; a key above UInt32.max lands in the last range.
            let key = address - addressBase
            // Indices stay below rangeCount, whose section init checked: no arithmetic can overflow.
            while length > 1 {
                let half = length &>> 1
                let start = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ (low &+ half) &* 4, as: UInt32.self))
                low = UInt64(start) <= key ? low &+ half : low
                length &-= half
            }
            let first = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: starts + low * 4, as: UInt32.self))
            return UInt64(first) <= key ? low : nil
        } else {
            while length > 1 {
                let half = length &>> 1
                let start = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ (low &+ half) &* 8, as: UInt64.self))
                low = start <= address ? low &+ half : low
                length &-= half
            }
            let first = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: starts + low * 8, as: UInt64.self))
            return first <= address ? low : nil
        }
    }

    /// `fastRangeIndex` for many addresses at once; -1 where there is none or the range has no
    /// frames (a gap).
    ///
    /// The branch-free search takes the same number of steps for every key, so the searches run
    /// in lockstep, one tree level at a time over all keys: the reads of different keys do not
    /// depend on each other and the processor overlaps their cache misses, which is where a
    /// single search spends its time. Then each range's record is read, likewise overlapped, so
    /// that walking the frames right after finds it in cache.
    func fastRangeIndices(_ bytes: UnsafeRawBufferPointer, _ addresses: UnsafeBufferPointer<UInt64>,
                          into result: UnsafeMutableBufferPointer<Int>) {
        precondition(result.count >= addresses.count, "result buffer too small")
        guard rangeCount > 0 else {
            for index in addresses.indices { result[index] = -1 }
            return
        }
        let starts = rangeStarts.offset
        let base = hasCompactRangeStarts ? addressBase : 0
        for index in addresses.indices { result[index] = 0 }
        var length = rangeCount
        while length > 1 {
            let half = length &>> 1
            if hasCompactRangeStarts {
                for index in addresses.indices {
                    let low = result[index]
                    let start = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ (low &+ half) &* 4, as: UInt32.self))
                    // A key below the base wraps high here and is rejected after the search.
                    result[index] = UInt64(start) <= addresses[index] &- base ? low &+ half : low
                }
            } else {
                for index in addresses.indices {
                    let low = result[index]
                    let start = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ (low &+ half) &* 8, as: UInt64.self))
                    result[index] = start <= addresses[index] ? low &+ half : low
                }
            }
            length &-= half
        }
        for index in addresses.indices {
            let low = result[index]
            let address = addresses[index]
            let first = hasCompactRangeStarts
                ? UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ low &* 4, as: UInt32.self)))
                : UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: starts &+ low &* 8, as: UInt64.self))
            guard address >= base, first <= address &- base else {
                result[index] = -1
                continue
            }
            // The record's scope field (its last field) says whether the range has frames; reading
            // it here, for all keys in a row, also brings the records into cache for the walk.
            let recordEnd = rangeRecords.offset + (low + 1) * rangeRecordSize
            if Self.load(bytes, recordEnd - scopeWidth, width: scopeWidth) == 0 { result[index] = -1 }
        }
    }

    /// Reads the scope record and every call-site record of the inline chains of `ranges` (-1:
    /// none), one chain level at a time over all of them, so that the reads of different chains
    /// overlap their cache misses (as the batch search does for the range starts) and walking
    /// the frames afterwards finds the records in cache. `scratch` must hold as many indices as
    /// `ranges`. A hint only: an index out of bounds or a caller not before its callee ends that
    /// chain quietly (the walk reports it), and the depth is bounded.
    ///
    /// The function-name records of the frames are written to `names` (as many as fit; their
    /// count to `nameCount`), for a caller that caches by name to read its entries ahead too.
    func warmFrames(_ bytes: UnsafeRawBufferPointer, ranges: UnsafeBufferPointer<Int>, scratch: UnsafeMutableBufferPointer<Int>,
                    names: UnsafeMutableBufferPointer<UInt32>, nameCount: inout Int) -> UInt32 {
        precondition(scratch.count >= ranges.count, "scratch buffer too small")
        nameCount = 0
        // Folding every value read into the result keeps the reads from being optimised away.
        var sink: UInt32 = 0
        var live = 0
        for index in ranges.indices {
            let range = ranges[index]
            guard range >= 0, range < rangeCount else { continue }
            let scope = Self.load(bytes, rangeRecords.offset + (range + 1) * rangeRecordSize - scopeWidth, width: scopeWidth)
            guard scope != 0, Int(scope) <= scopeCount else { continue }
            let record = scopes.offset + (Int(scope) - 1) * scopeRecordSize
            let caller = Self.load(bytes, record + 2 * nameWidth, width: callSiteWidth)
            sink &+= caller
            if nameCount + 2 <= names.count {
                names[nameCount] = Self.load(bytes, record, width: nameWidth)
                nameCount += 1
                let physical = Self.load(bytes, record + nameWidth, width: nameWidth)
                if physical != 0 {
                    names[nameCount] = physical - 1
                    nameCount += 1
                }
            }
            guard caller >= TableFormat.callerBias, Int(caller - TableFormat.callerBias) < callSiteCount else { continue }
            scratch[live] = Int(caller - TableFormat.callerBias)
            live += 1
        }
        let callerOffset = fileWidth + lineWidth + columnWidth + nameWidth
        var depth = 0
        while live > 0 && depth < Self.maximumWarmDepth {
            var next = 0
            for index in 0..<live {
                let callSite = scratch[index]
                let record = callSites.offset + callSite * callSiteRecordSize
                let caller = Self.load(bytes, record + callerOffset, width: callSiteWidth)
                sink &+= caller
                if nameCount < names.count {
                    names[nameCount] = Self.load(bytes, record + callerOffset - nameWidth, width: nameWidth)
                    nameCount += 1
                }
                guard caller >= TableFormat.callerBias, Int(caller - TableFormat.callerBias) < callSite else { continue }
                scratch[next] = Int(caller - TableFormat.callerBias)
                next += 1
            }
            live = next
            depth += 1
        }
        return sink
    }

    /// Reads the first bytes of the strings of function-name records `names`, all names at once
    /// (first their entries in the name section, then their strings), so that the cache misses
    /// of different names overlap and reading the names right after finds them in cache. A hint:
    /// an index or offset out of bounds is skipped. `names` is overwritten (with string offsets).
    /// Returns a checksum of the bytes read, for the caller to keep.
    func warmNames(_ bytes: UnsafeRawBufferPointer, _ names: UnsafeMutableBufferPointer<UInt32>) -> UInt32 {
        var sink: UInt32 = 0
        for index in names.indices {
            let name = Int(names[index])
            names[index] = name < nameCount ? Self.load(bytes, self.names.offset + name * stringWidth, width: stringWidth) : .max
        }
        let size = strings.size
        for index in names.indices {
            let position = Int(names[index])
            guard position < size else { continue }
            sink &+= UInt32(bytes.load(fromByteOffset: strings.offset + position, as: UInt8.self))
            // Most mangled names run past one cache line.
            if position + 64 < size { sink &+= UInt32(bytes.load(fromByteOffset: strings.offset + position + 64, as: UInt8.self)) }
        }
        return sink
    }

    /// Inline levels `warmFrames` follows at most (deeper chains are walked cold).
    static let maximumWarmDepth = 64

    /// Range record `index`: the innermost frame's file, line and column, and the scope field
    /// (0 for no frames, else scope record index + 1). The index is checked; the section's extent
    /// was checked when the table was opened.
    @inline(__always)
    func rangeRecord(_ bytes: UnsafeRawBufferPointer, _ index: Int) throws(FormatError) -> (location: FrameRecord, scope: UInt32) {
        guard index >= 0, index < rangeCount else {
            throw FormatError(.invalidValue, "range index \(index) out of bounds")
        }
        var offset = rangeRecords.offset + index * rangeRecordSize
        let record = location(bytes, &offset)
        return (record, Self.load(bytes, offset, width: scopeWidth))
    }

    /// Scope record `index`: the innermost function's name, the physical-frame override, the caller.
    @inline(__always)
    func scopeRecord(_ bytes: UnsafeRawBufferPointer, _ index: Int) throws(FormatError) -> FrameRecord {
        guard index >= 0, index < scopeCount else {
            throw FormatError(.invalidValue, "scope record \(index) out of bounds (\(scopeCount) records)")
        }
        let offset = scopes.offset + index * scopeRecordSize
        var record = FrameRecord()
        record.name = Self.load(bytes, offset, width: nameWidth)
        record.physicalName = Self.load(bytes, offset + nameWidth, width: nameWidth)
        record.caller = Self.load(bytes, offset + 2 * nameWidth, width: callSiteWidth)
        return record
    }

    /// Call-site record `index`: an enclosing frame's function and the position of the call in it.
    @inline(__always)
    func callSite(_ bytes: UnsafeRawBufferPointer, _ index: Int) throws(FormatError) -> FrameRecord {
        guard index >= 0, index < callSiteCount else {
            throw FormatError(.invalidValue, "call-site record \(index) out of bounds (\(callSiteCount) records)")
        }
        var offset = callSites.offset + index * callSiteRecordSize
        var record = location(bytes, &offset)
        record.name = Self.load(bytes, offset, width: nameWidth)
        record.caller = Self.load(bytes, offset + nameWidth, width: callSiteWidth)
        return record
    }

    /// The file, line and column fields that range and call-site records both start with, read at
    /// `offset`, which is moved past them.
    @inline(__always)
    private func location(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> FrameRecord {
        var record = FrameRecord()
        record.file = Self.load(bytes, offset, width: fileWidth)
        offset += fileWidth
        record.line = Self.load(bytes, offset, width: lineWidth)
        offset += lineWidth
        record.column = Self.load(bytes, offset, width: columnWidth)
        offset += columnWidth
        return record
    }

    /// The string whose length prefix is at `offset` in the string data (see `string`).
    @inline(__always)
    func fastString(_ bytes: UnsafeRawBufferPointer, at offset: UInt32) throws(FormatError) -> StringRef {
        let size = strings.size
        var position = Int(offset)
        // Most strings are shorter than 128 bytes: one length byte.
        if position < size {
            let byte = bytes.load(fromByteOffset: strings.offset + position, as: UInt8.self)
            if byte & 0x80 == 0 {
                position += 1
                guard Int(byte) <= size - position else {
                    throw FormatError(.truncated, "string at \(offset) (\(byte) bytes) runs past the string data",
                                      offset: UInt64(strings.offset) + UInt64(offset))
                }
                return StringRef(offset: UInt32(position), length: UInt32(byte))
            }
        }
        return try string(ByteReader(bytes), at: offset)
    }

    /// The name of function-name record `index` (see `functionName`).
    @inline(__always)
    func fastFunctionName(_ bytes: UnsafeRawBufferPointer, _ index: UInt32) throws(FormatError) -> StringRef {
        guard Int(index) < nameCount else {
            throw FormatError(.invalidValue, "function name \(index) out of bounds (\(nameCount) names)")
        }
        return try fastString(bytes, at: Self.load(bytes, names.offset + Int(index) * stringWidth, width: stringWidth))
    }

    /// The directory and name of file record `index` (see `file`).
    @inline(__always)
    func fastFile(_ bytes: UnsafeRawBufferPointer, _ index: UInt32) throws(FormatError) -> (directory: StringRef, name: StringRef) {
        guard Int(index) < fileCount else {
            throw FormatError(.invalidValue, "file \(index) out of bounds (\(fileCount) files)")
        }
        let offset = files.offset + Int(index) * fileRecordSize
        return (try fastString(bytes, at: Self.load(bytes, offset, width: stringWidth)),
                try fastString(bytes, at: Self.load(bytes, offset + stringWidth, width: stringWidth)))
    }
}
