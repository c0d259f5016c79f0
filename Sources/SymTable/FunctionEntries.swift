import SymBytes

/// Where each function of a table starts, by name: the index behind `SymbolTable.address(ofFunction:offset:)`.
///
/// A table stores, per address range, the inline chain whose last frame is the physical function
/// (named by the ELF symbol covering the range when there is one, else by its DWARF scope). A
/// function is a *run*: consecutive ranges whose physical frame has the same name, ended by a
/// range of another name or without frames. The index lists every run once, sorted by the hash
/// of its name, so a name is found by one binary search; it is built in one pass over the
/// ranges (plus one over the scope and call-site records), O(n log n) in the runs.
struct FunctionEntries: Sendable {
    /// One run of ranges with the same physical function name.
    struct Run: Sendable {
        /// FNV-1a hash of the name's bytes (the sort key).
        var hash: UInt64
        /// First address of the run.
        var start: UInt64
        /// One past its last address (`UInt64.max` when the run reaches the end of the address space).
        var end: UInt64
        /// The name's offset in the string data (strings are deduplicated by their bytes, so
        /// equal names have equal offsets).
        var name: UInt32
    }

    /// Runs sorted by (hash, start).
    let runs: [Run]

    /// Indexes the runs of `layout`'s table in `bytes`; throws `FormatError` on a corrupt record.
    init(_ layout: TableLayout, _ bytes: UnsafeRawBufferPointer) throws(FormatError) {
        // The physical function's name of each call-site record: its own when it is the physical
        // frame, else its caller's, which the writer puts before it.
        var callSiteNames = [UInt32](repeating: 0, count: layout.callSiteCount)
        for index in 0..<layout.callSiteCount {
            let record = try layout.callSite(bytes, index)
            if record.caller == TableFormat.callerNone {
                callSiteNames[index] = try layout.functionNameOffset(bytes, record.name)
            } else if record.caller >= TableFormat.callerBias, Int(record.caller - TableFormat.callerBias) < index {
                callSiteNames[index] = callSiteNames[Int(record.caller - TableFormat.callerBias)]
            } else {
                throw FormatError(.invalidValue, "call-site record \(index) has caller \(record.caller), which is not before it")
            }
        }
        // The same per scope record (the name the chain's last frame shows: `FrameCursor`'s rule).
        var scopeNames = [UInt32](repeating: 0, count: layout.scopeCount)
        for index in 0..<layout.scopeCount {
            let record = try layout.scopeRecord(bytes, index)
            if record.physicalName != 0 && record.caller != TableFormat.callerSymbolOnly {
                scopeNames[index] = try layout.functionNameOffset(bytes, record.physicalName - 1)
            } else if record.caller < TableFormat.callerBias {
                scopeNames[index] = try layout.functionNameOffset(bytes, record.name)
            } else {
                let caller = Int(record.caller - TableFormat.callerBias)
                guard caller < layout.callSiteCount else {
                    throw FormatError(.invalidValue, "scope record \(index) has caller \(caller) out of bounds")
                }
                scopeNames[index] = callSiteNames[caller]
            }
        }
        callSiteNames = []
        var runs: [Run] = []
        var current: (name: UInt32, start: UInt64)?
        let reader = ByteReader(bytes)
        for index in 0..<layout.rangeCount {
            let start = try layout.rangeStart(reader, index)
            let scope = try layout.rangeRecord(bytes, index).scope
            guard scope == 0 || Int(scope) <= layout.scopeCount else {
                throw FormatError(.invalidValue, "range \(index) has scope \(scope) out of bounds")
            }
            if let open = current, start < open.start {
                throw FormatError(.invalidValue, "range \(index) starts below an earlier range")
            }
            let name: UInt32? = scope == 0 ? nil : scopeNames[Int(scope) - 1]
            if let open = current, open.name != name {
                runs.append(Run(hash: 0, start: open.start, end: start, name: open.name))
                current = nil
            }
            if current == nil, let name { current = (name, start) }
        }
        if let open = current { runs.append(Run(hash: 0, start: open.start, end: .max, name: open.name)) }
        for index in runs.indices {
            runs[index].hash = Self.hash(try Self.bytes(ofNameAt: runs[index].name, layout, bytes))
        }
        runs.sort { ($0.hash, $0.start) < ($1.hash, $1.start) }
        self.runs = runs
    }

    /// The address `offset` bytes into the function `name`: the start of the one run of that name
    /// that reaches `start + offset` (a return address may be one past the run: a call that ends
    /// the function) and, with a `pageOffset`, whose address has those low 12 bits; nil when no
    /// run or several do.
    func address(of name: [UInt8], offset: UInt64, pageOffset: UInt64?, _ layout: TableLayout,
                 _ bytes: UnsafeRawBufferPointer) throws(FormatError) -> UInt64? {
        let hash = Self.hash(name)
        var low = 0
        var high = runs.count
        while low < high {
            let middle = low + (high - low) / 2
            if runs[middle].hash < hash { low = middle + 1 } else { high = middle }
        }
        var found: UInt64?
        var index = low
        while index < runs.count && runs[index].hash == hash {
            let run = runs[index]
            index += 1
            guard offset <= run.end - run.start, pageOffset.map({ (run.start &+ offset) & 0xfff == $0 }) ?? true,
                  try Self.bytes(ofNameAt: run.name, layout, bytes).elementsEqual(name) else {
                continue
            }
            // Two functions of one name both reach the offset: which one the report meant is unknown.
            guard found == nil else { return nil }
            found = run.start &+ offset
        }
        return found
    }

    /// The bytes of the string whose length prefix is at `offset` in the string data.
    private static func bytes(ofNameAt offset: UInt32, _ layout: TableLayout,
                              _ bytes: UnsafeRawBufferPointer) throws(FormatError) -> UnsafeRawBufferPointer {
        let ref = try layout.fastString(bytes, at: offset)
        let start = layout.strings.offset + Int(ref.offset)
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(ref.length))])
    }

    /// 64-bit FNV-1a of `bytes`.
    static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

extension TableLayout {
    /// The string-data offset of function-name record `index` (equal names, equal offsets).
    func functionNameOffset(_ bytes: UnsafeRawBufferPointer, _ index: UInt32) throws(FormatError) -> UInt32 {
        guard Int(index) < nameCount else {
            throw FormatError(.invalidValue, "function name \(index) out of bounds (\(nameCount) names)")
        }
        return Self.load(bytes, names.offset + Int(index) * stringWidth, width: stringWidth)
    }
}
