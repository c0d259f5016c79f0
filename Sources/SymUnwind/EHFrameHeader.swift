import SymBytes

/// `.eh_frame_hdr` (LSB 5.0 §10.6.2): where `.eh_frame` is and a sorted table of (initial
/// location, FDE address) pairs, so the FDE of one address is found by binary search without
/// reading the whole `.eh_frame`.
public struct EHFrameHeader: Sendable {
    /// Address of `.eh_frame`, as the header records it.
    public var ehFrameAddress: UInt64
    /// Number of entries in the search table (0 when the header has no table).
    public var count: Int

    let address: UInt64
    let tableOffset: Int
    let tableEncoding: UInt8
    let entrySize: Int
    let littleEndian: Bool

    /// Parses the header of `section`; throws on a version, encoding or size it cannot read.
    public init(_ section: CallFrameInfo.Section, target: CallFrameInfo.Target) throws(FormatError) {
        var cursor = CFICursor(section.bytes, littleEndian: target.littleEndian)
        let version = try cursor.u8(".eh_frame_hdr's version")
        guard version == 1 else { throw FormatError(.unsupported, ".eh_frame_hdr version \(version)", offset: 0) }
        let framePointerEncoding = try cursor.u8()
        let countEncoding = try cursor.u8()
        let tableEncoding = try cursor.u8()
        let headerTarget = CallFrameInfo.Target(addressSize: target.addressSize, littleEndian: target.littleEndian,
                                                textAddress: target.textAddress, dataAddress: section.address)
        guard let frameAddress = try PointerEncoding.read(framePointerEncoding, &cursor, section: section,
                                                          addressSize: target.addressSize, target: headerTarget) else {
            throw FormatError(.invalidValue, ".eh_frame_hdr omits the .eh_frame pointer", offset: 4)
        }
        ehFrameAddress = frameAddress
        address = section.address
        littleEndian = target.littleEndian
        self.tableEncoding = tableEncoding
        let countValue = try PointerEncoding.read(countEncoding, &cursor, section: section,
                                                  addressSize: target.addressSize, target: headerTarget) ?? 0
        let size: Int
        switch tableEncoding & 0x0f {
        case 0x02, 0x0a: size = 2
        case 0x03, 0x0b: size = 4
        case 0x04, 0x0c: size = 8
        default: size = 0
        }
        entrySize = 2 * size
        tableOffset = cursor.offset
        guard tableEncoding != PointerEncoding.omit, size > 0, tableEncoding & 0x70 == 0x30 || tableEncoding & 0x70 == 0 else {
            count = 0  // no usable table: callers read the whole `.eh_frame`
            return
        }
        // The count comes from the file: it must fit in the section.
        guard countValue <= UInt64(cursor.remaining / entrySize) else {
            throw FormatError(.truncated, ".eh_frame_hdr's table of \(countValue) entries extends past the section",
                              offset: UInt64(tableOffset))
        }
        count = Int(countValue)
    }

    /// The `(initial location, FDE address)` pair at `index`.
    func pair(_ index: Int, in bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var cursor = CFICursor(bytes, offset: tableOffset + index * entrySize, littleEndian: littleEndian)
        let size = entrySize / 2
        let signed = tableEncoding & 0x08 != 0
        func value(_ cursor: inout CFICursor) -> UInt64 {
            guard var raw = try? cursor.unsigned(size, "an .eh_frame_hdr entry") else { return 0 }
            if signed && size < 8 && raw >> (UInt64(size) * 8 - 1) & 1 == 1 { raw |= ~0 << (UInt64(size) * 8) }
            return tableEncoding & 0x70 == 0x30 ? address &+ raw : raw
        }
        return (value(&cursor), value(&cursor))
    }

    /// The address of the FDE whose range may cover `address` (the table's last entry at or
    /// below it), or nil.
    public func fdeAddress(for address: UInt64, in section: CallFrameInfo.Section) -> UInt64? {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if pair(middle, in: section.bytes).0 <= address { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : pair(low - 1, in: section.bytes).1
    }
}

extension CallFrameInfo {
    /// The unwind entry covering `address`, found through `.eh_frame_hdr`'s search table and read
    /// alone from `.eh_frame` (the whole section is not parsed). Nil when no FDE covers it.
    public static func entry(at address: UInt64, ehFrame: Section, header: Section,
                             target: Target) throws(FormatError) -> UnwindEntry? {
        let table = try EHFrameHeader(header, target: target)
        guard let fde = table.fdeAddress(for: address, in: header),
              fde >= ehFrame.address, fde - ehFrame.address < UInt64(ehFrame.bytes.count) else { return nil }
        let offset = Int(fde - ehFrame.address)
        var cursor = CFICursor(ehFrame.bytes, offset: offset, littleEndian: target.littleEndian)
        let record = try RecordHeader.read(&cursor, kind: .ehFrame)
        guard !record.isCIE, let cieOffset = record.ciePointer(kind: .ehFrame),
              cieOffset >= 0, cieOffset < ehFrame.bytes.count else {
            throw FormatError(.invalidValue, ".eh_frame_hdr points at a record that is not an FDE", offset: UInt64(offset))
        }
        let cie = try CommonInformation.read(ehFrame, at: cieOffset, kind: .ehFrame, target: target)
        guard let entry = try FrameDescription.read(ehFrame, record: record, cie: cie, kind: .ehFrame, target: target),
              entry.start <= address, address < entry.end else { return nil }
        return entry
    }
}
