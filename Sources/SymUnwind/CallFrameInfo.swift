import SymBytes

/// Call-frame information of one module: `.eh_frame` and `.debug_frame` evaluated into unwind
/// rows per address range. Pure: it is handed section bytes and their addresses, never a file.
///
/// A broken record is skipped with a diagnostic (the others still count); a broken record length
/// ends the section, since nothing after it can be found again.
public struct CallFrameInfo: Sendable {
    /// Entries sorted by start address (an address may be covered by entries of both sections;
    /// `entry(at:)` prefers `.eh_frame`, which is what the program itself unwinds with).
    public private(set) var entries: [UnwindEntry]
    /// Records that were skipped, and why.
    public private(set) var diagnostics: [FormatError]

    /// Largest DWARF register number accepted (x86_64 uses up to 130 with AVX-512 masks, AArch64
    /// up to 127 with SVE).
    public static let maximumRegister: UInt16 = 4095
    /// Most `DW_CFA_remember_state` entries held at once.
    static let maximumStateDepth = 64
    /// Most distinct registers with a rule in one row.
    static let maximumRulesPerRow = 256
    /// Most diagnostics kept (the rest are counted only).
    static let maximumDiagnostics = 100

    /// How many diagnostics were not kept.
    public private(set) var droppedDiagnostics = 0

    /// Creates an empty table.
    public init() {
        entries = []
        diagnostics = []
    }

    /// One section's bytes and where it is loaded.
    public struct Section {
        /// The section's bytes.
        public var bytes: UnsafeRawBufferPointer
        /// Its virtual address (`sh_addr`), the base of `pcrel` pointers.
        public var address: UInt64

        /// Creates a section description.
        public init(bytes: UnsafeRawBufferPointer, address: UInt64) {
            self.bytes = bytes
            self.address = address
        }
    }

    /// Everything needed to read pointers of a module.
    public struct Target: Sendable {
        /// 8 for 64-bit ELF, 4 for 32-bit.
        public var addressSize: Int
        /// Byte order.
        public var littleEndian: Bool
        /// Base of `DW_EH_PE_textrel` pointers (`.text`'s address), when known.
        public var textAddress: UInt64?
        /// Base of `DW_EH_PE_datarel` pointers in `.eh_frame` (`.got`'s address), when known.
        public var dataAddress: UInt64?

        /// Creates a target description.
        public init(addressSize: Int, littleEndian: Bool, textAddress: UInt64? = nil, dataAddress: UInt64? = nil) {
            self.addressSize = addressSize
            self.littleEndian = littleEndian
            self.textAddress = textAddress
            self.dataAddress = dataAddress
        }
    }

    /// Calls `body` with each entry of `.eh_frame`, then of `.debug_frame` (either may be absent),
    /// in section order, keeping none: for a consumer that reduces the rows as they come (the
    /// table writer), so a module's rows are never all held at once. Returns the diagnostics.
    public static func forEachEntry(ehFrame: Section?, debugFrame: Section?, target: Target,
                                    _ body: (UnwindEntry) -> Void) -> [FormatError] {
        var table = CallFrameInfo()
        if let ehFrame { table.parse(ehFrame, kind: .ehFrame, target: target, body) }
        if let debugFrame { table.parse(debugFrame, kind: .debugFrame, target: target, body) }
        return table.diagnostics
    }

    /// Reads `.eh_frame` and `.debug_frame` (either may be absent) into one table.
    public static func read(ehFrame: Section?, debugFrame: Section?, target: Target) -> CallFrameInfo {
        var table = CallFrameInfo()
        if let ehFrame { table.parse(ehFrame, kind: .ehFrame, target: target) }
        if let debugFrame { table.parse(debugFrame, kind: .debugFrame, target: target) }
        // Stable sort: among equal starts, `.eh_frame` (parsed first) stays first.
        table.entries = table.entries.enumerated().sorted {
            ($0.element.start, $0.offset) < ($1.element.start, $1.offset)
        }.map(\.element)
        return table
    }

    /// The entry covering `address`, preferring `.eh_frame`.
    public func entry(at address: UInt64) -> UnwindEntry? {
        // Entries may overlap (both sections, or broken producers): look back over those that
        // start at or before the address; the table is sorted by start.
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        var found: UnwindEntry?
        var index = low - 1
        var looked = 0
        while index >= 0 && looked < 64 {
            let entry = entries[index]
            if address < entry.end {
                if entry.source == .ehFrame { return entry }
                found = found ?? entry
            }
            index -= 1
            looked += 1
        }
        return found
    }

    /// The row in force at `address`.
    public func row(at address: UInt64) -> (entry: UnwindEntry, row: UnwindRow)? {
        guard let entry = entry(at: address), let row = entry.row(at: address) else { return nil }
        return (entry, row)
    }

    mutating func note(_ error: FormatError) {
        if diagnostics.count < Self.maximumDiagnostics { diagnostics.append(error) } else { droppedDiagnostics += 1 }
    }

    // MARK: - Records

    /// Walks the records of one section: CIEs are parsed when an FDE first names them (and
    /// remembered by offset), FDEs are evaluated into entries.
    mutating func parse(_ section: Section, kind: CallFrameSection, target: Target) {
        var found: [UnwindEntry] = []
        parse(section, kind: kind, target: target) { found.append($0) }
        entries.append(contentsOf: found)
    }

    /// `parse(_:kind:target:)` handing each entry to `body` instead of keeping it.
    mutating func parse(_ section: Section, kind: CallFrameSection, target: Target, _ body: (UnwindEntry) -> Void) {
        guard target.addressSize == 4 || target.addressSize == 8 else {
            note(FormatError(.unsupported, "address size \(target.addressSize) in \(kind.rawValue)"))
            return
        }
        let bytes = section.bytes
        var cies: [Int: Result<CommonInformation, FormatError>] = [:]
        var offset = 0
        while offset < bytes.count {
            var cursor = CFICursor(bytes, offset: offset, littleEndian: target.littleEndian)
            let record: RecordHeader
            do {
                record = try RecordHeader.read(&cursor, kind: kind)
            } catch {
                note(error)
                return
            }
            if record.isTerminator { return }
            offset = record.end
            guard !record.isCIE else { continue }
            let cie: CommonInformation
            switch record.ciePointer(kind: kind) {
            case nil:
                note(FormatError(.invalidValue, "FDE's CIE pointer points outside the section", offset: UInt64(record.start)))
                continue
            case let cieOffset?:
                guard cieOffset >= 0, cieOffset < bytes.count else {
                    note(FormatError(.invalidValue, "FDE's CIE pointer points outside the section", offset: UInt64(record.start)))
                    continue
                }
                if cies[cieOffset] == nil {
                    cies[cieOffset] = Result { () throws(FormatError) -> CommonInformation in
                        try CommonInformation.read(section, at: cieOffset, kind: kind, target: target)
                    }
                }
                switch cies[cieOffset]! {
                case .success(let parsed): cie = parsed
                case .failure(let error):
                    note(FormatError(error.code, "FDE's CIE: \(error.message)", offset: error.offset))
                    continue
                }
            }
            do {
                if let entry = try FrameDescription.read(section, record: record, cie: cie, kind: kind, target: target) {
                    body(entry)
                }
            } catch {
                note(error)
            }
        }
    }
}

/// The length and id of a CIE or FDE (DWARF 5 §6.4.1; LSB `.eh_frame`).
struct RecordHeader {
    /// Offset of the length field.
    var start: Int
    /// Offset of the CIE id / CIE pointer field.
    var idOffset: Int
    /// Offset of the first byte after the id field.
    var bodyOffset: Int
    /// One past the record.
    var end: Int
    /// The id field.
    var id: UInt64
    /// Whether the 64-bit DWARF format is used.
    var is64Bit: Bool
    /// `.eh_frame`'s zero-length terminator.
    var isTerminator: Bool
    var isCIE: Bool

    static func read(_ cursor: inout CFICursor, kind: CallFrameSection) throws(FormatError) -> RecordHeader {
        let start = cursor.offset
        var length = UInt64(try cursor.u32("a CFI record's length"))
        var is64Bit = false
        if length == 0xffff_ffff {
            length = try cursor.u64("a CFI record's 64-bit length")
            is64Bit = true
        } else if length >= 0xffff_fff0 {
            throw FormatError(.invalidValue, "reserved CFI record length 0x\(String(length, radix: 16))", offset: UInt64(start))
        }
        if length == 0 {
            // `.eh_frame` ends at a zero length; in `.debug_frame` it is an empty record (padding).
            return RecordHeader(start: start, idOffset: cursor.offset, bodyOffset: cursor.offset, end: cursor.offset,
                                id: 0, is64Bit: is64Bit, isTerminator: kind == .ehFrame, isCIE: true)
        }
        guard length <= UInt64(cursor.remaining) else {
            throw FormatError(.truncated, "CFI record of \(length) bytes extends past the end of the section", offset: UInt64(start))
        }
        let end = cursor.offset + Int(length)
        cursor.limit = end
        let idOffset = cursor.offset
        let id = is64Bit ? try cursor.u64("a CIE id") : UInt64(try cursor.u32("a CIE id"))
        let isCIE: Bool
        switch kind {
        case .ehFrame: isCIE = id == 0
        case .debugFrame: isCIE = is64Bit ? id == UInt64.max : id == 0xffff_ffff
        }
        return RecordHeader(start: start, idOffset: idOffset, bodyOffset: cursor.offset, end: end, id: id,
                            is64Bit: is64Bit, isTerminator: false, isCIE: isCIE)
    }

    /// The section offset of the FDE's CIE: relative to the id field in `.eh_frame`, from the
    /// section's start in `.debug_frame`.
    func ciePointer(kind: CallFrameSection) -> Int? {
        switch kind {
        case .ehFrame:
            guard id <= UInt64(idOffset) else { return nil }
            return idOffset - Int(id)
        case .debugFrame:
            guard id <= UInt64(Int.max) else { return nil }
            return Int(id)
        }
    }
}

/// A parsed CIE.
struct CommonInformation {
    var version: UInt8
    var codeAlignment: UInt64
    var dataAlignment: Int64
    var returnAddressRegister: UInt16
    /// `R`: how FDE addresses are encoded (`.debug_frame`: absolute, address size).
    var pointerEncoding: UInt8
    /// Whether FDEs carry augmentation data (`z`).
    var hasAugmentationData: Bool
    /// `S`.
    var isSignalFrame: Bool
    var addressSize: Int
    /// Where the initial instructions are in the section.
    var instructions: Range<Int>

    static func read(_ section: CallFrameInfo.Section, at offset: Int, kind: CallFrameSection,
                     target: CallFrameInfo.Target) throws(FormatError) -> CommonInformation {
        var cursor = CFICursor(section.bytes, offset: offset, littleEndian: target.littleEndian)
        let header = try RecordHeader.read(&cursor, kind: kind)
        guard header.isCIE, !header.isTerminator, header.end > header.bodyOffset else {
            throw FormatError(.invalidValue, "the record is not a CIE", offset: UInt64(offset))
        }
        let version = try cursor.u8("the CIE version")
        guard [1, 3, 4].contains(version) else {
            throw FormatError(.unsupported, "CIE version \(version)", offset: UInt64(cursor.offset - 1))
        }
        let augmentationStart = cursor.offset
        var augmentation: [UInt8] = []
        while true {
            let byte = try cursor.u8("the CIE augmentation string")
            if byte == 0 { break }
            augmentation.append(byte)
        }
        var addressSize = target.addressSize
        if version >= 4 {
            let size = Int(try cursor.u8("the CIE address size"))
            let segmentSize = try cursor.u8("the CIE segment selector size")
            guard size == 4 || size == 8, segmentSize == 0 else {
                throw FormatError(.unsupported, "CIE address size \(size), segment selector size \(segmentSize)",
                                  offset: UInt64(cursor.offset - 2))
            }
            addressSize = size
        }
        var cie = CommonInformation(
            version: version, codeAlignment: 0, dataAlignment: 0, returnAddressRegister: 0,
            pointerEncoding: kind == .debugFrame ? PointerEncoding.absolute : PointerEncoding.absolute,
            hasAugmentationData: false, isSignalFrame: false, addressSize: addressSize,
            instructions: 0..<0)
        // GCC's old "eh" augmentation carries a pointer before the alignments.
        if augmentation.starts(with: [0x65, 0x68]) {
            try cursor.skip(UInt64(addressSize), "the CIE's eh pointer")
        }
        cie.codeAlignment = try cursor.uleb("the code alignment factor")
        cie.dataAlignment = try cursor.sleb("the data alignment factor")
        if version == 1 {
            cie.returnAddressRegister = UInt16(try cursor.u8("the return address register"))
        } else {
            cie.returnAddressRegister = try cursor.register()
        }
        if augmentation.first == 0x7a /* z */ {
            cie.hasAugmentationData = true
            let length = try cursor.uleb("the CIE augmentation data length")
            guard length <= UInt64(cursor.remaining) else { throw cursor.truncated("the CIE augmentation data") }
            let dataEnd = cursor.offset + Int(length)
            var data = cursor
            data.limit = dataEnd
            for letter in augmentation.dropFirst() {
                switch letter {
                case 0x4c: // L: the LSDA pointer's encoding; the pointer itself is in each FDE.
                    _ = try data.u8("the LSDA encoding")
                case 0x52: // R
                    cie.pointerEncoding = try data.u8("the FDE pointer encoding")
                case 0x50: // P: the personality routine, encoded.
                    let encoding = try data.u8("the personality encoding")
                    try PointerEncoding.skip(encoding, &data, addressSize: addressSize)
                case 0x53: // S
                    cie.isSignalFrame = true
                case 0x42, 0x47: // B (AArch64 BTI), G (MTE tagged frames): no data.
                    break
                default:
                    // An unknown letter's data cannot be skipped piecewise, but `z` gave the length.
                    break
                }
            }
            cursor.offset = dataEnd
        } else if !augmentation.isEmpty && !augmentation.starts(with: [0x65, 0x68]) {
            throw FormatError(.unsupported, "CIE augmentation \"\(String(decoding: augmentation, as: UTF8.self))\"",
                              offset: UInt64(augmentationStart))
        }
        cie.instructions = cursor.offset..<max(cursor.offset, cursor.limit)
        return cie
    }
}

/// FDE parsing and evaluation.
enum FrameDescription {
    /// The FDE at `record` evaluated into an entry, or nil for an empty range.
    static func read(_ section: CallFrameInfo.Section, record: RecordHeader, cie: CommonInformation,
                     kind: CallFrameSection, target: CallFrameInfo.Target) throws(FormatError) -> UnwindEntry? {
        var cursor = CFICursor(section.bytes, offset: record.bodyOffset, limit: record.end, littleEndian: target.littleEndian)
        let start: UInt64
        let length: UInt64
        switch kind {
        case .ehFrame:
            guard let location = try PointerEncoding.read(cie.pointerEncoding, &cursor, section: section,
                                                          addressSize: cie.addressSize, target: target) else {
                throw FormatError(.invalidValue, "FDE's initial location is omitted", offset: UInt64(record.start))
            }
            start = location
            // The range has the format of the encoding but no base.
            length = try PointerEncoding.read(cie.pointerEncoding & 0x0f, &cursor, section: section,
                                              addressSize: cie.addressSize, target: target) ?? 0
        case .debugFrame:
            start = try cursor.unsigned(cie.addressSize, "the FDE's initial location")
            length = try cursor.unsigned(cie.addressSize, "the FDE's address range")
        }
        if cie.hasAugmentationData {
            let dataLength = try cursor.uleb("the FDE augmentation data length")
            try cursor.skip(dataLength, "the FDE augmentation data")
        }
        let (end, overflow) = start.addingReportingOverflow(length)
        guard !overflow else {
            throw FormatError(.invalidValue, "FDE range 0x\(String(start, radix: 16)) + 0x\(String(length, radix: 16)) overflows",
                              offset: UInt64(record.start))
        }
        guard length > 0 else { return nil }
        let instructions = UnsafeRawBufferPointer(rebasing: section.bytes[cursor.offset..<record.end])
        var machine = RuleMachine(cie: cie, start: start, end: end, kind: kind, section: section, target: target)
        try machine.run(UnsafeRawBufferPointer(rebasing: section.bytes[cie.instructions]),
                        baseOffset: cie.instructions.lowerBound, isInitial: true)
        machine.captureInitialRules()
        try machine.run(instructions, baseOffset: cursor.offset, isInitial: false)
        return UnwindEntry(start: start, end: end, returnAddressRegister: cie.returnAddressRegister,
                           isSignalFrame: cie.isSignalFrame, source: kind, rows: machine.finish())
    }
}

/// `DW_EH_PE_*` pointer encodings (LSB 5.0 §10.5).
enum PointerEncoding {
    static let absolute: UInt8 = 0x00
    static let omit: UInt8 = 0xff

    /// Steps over a pointer whose value is not needed (the personality routine).
    static func skip(_ encoding: UInt8, _ cursor: inout CFICursor, addressSize: Int) throws(FormatError) {
        if encoding == omit { return }
        switch encoding & 0x0f {
        case 0x00: try cursor.skip(UInt64(addressSize), "a pointer")
        case 0x01: _ = try cursor.uleb("a ULEB128 pointer")
        case 0x09: _ = try cursor.sleb("an SLEB128 pointer")
        case 0x02, 0x0a: try cursor.skip(2, "a pointer")
        case 0x03, 0x0b: try cursor.skip(4, "a pointer")
        case 0x04, 0x0c: try cursor.skip(8, "a pointer")
        default:
            throw FormatError(.unsupported, "pointer encoding 0x\(String(encoding, radix: 16))", offset: UInt64(cursor.offset))
        }
    }

    /// Reads a pointer; nil when the encoding is `omit`.
    static func read(_ encoding: UInt8, _ cursor: inout CFICursor, section: CallFrameInfo.Section, addressSize: Int,
                     target: CallFrameInfo.Target) throws(FormatError) -> UInt64? {
        if encoding == omit { return nil }
        let fieldOffset = cursor.offset
        let value: UInt64
        switch encoding & 0x0f {
        case 0x00: value = try cursor.unsigned(addressSize, "a pointer")
        case 0x01: value = try cursor.uleb("a ULEB128 pointer")
        case 0x02: value = UInt64(try cursor.u16())
        case 0x03: value = UInt64(try cursor.u32())
        case 0x04: value = try cursor.u64()
        case 0x09: value = UInt64(bitPattern: try cursor.sleb("an SLEB128 pointer"))
        case 0x0a: value = UInt64(bitPattern: Int64(Int16(bitPattern: try cursor.u16())))
        case 0x0b: value = UInt64(bitPattern: Int64(Int32(bitPattern: try cursor.u32())))
        case 0x0c: value = try cursor.u64()
        default:
            throw FormatError(.unsupported, "pointer encoding 0x\(String(encoding, radix: 16))", offset: UInt64(fieldOffset))
        }
        let base: UInt64
        switch encoding & 0x70 {
        case 0x00: base = 0
        case 0x10: base = section.address &+ UInt64(fieldOffset)  // pcrel
        case 0x20:
            guard let text = target.textAddress else {
                throw FormatError(.unsupported, "text-relative pointer without a text base", offset: UInt64(fieldOffset))
            }
            base = text
        case 0x30:
            guard let data = target.dataAddress else {
                throw FormatError(.unsupported, "data-relative pointer without a data base", offset: UInt64(fieldOffset))
            }
            base = data
        default:
            // funcrel and aligned never appear in FDE headers.
            throw FormatError(.unsupported, "pointer encoding 0x\(String(encoding, radix: 16))", offset: UInt64(fieldOffset))
        }
        // Indirect (0x80) pointers name a memory word; FDE locations never are.
        guard encoding & 0x80 == 0 else {
            throw FormatError(.unsupported, "indirect pointer in call-frame information", offset: UInt64(fieldOffset))
        }
        var address = base &+ value
        if addressSize == 4 { address &= 0xffff_ffff }
        return address
    }
}
