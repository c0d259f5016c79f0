import SymBytes

extension DWARFReader {
    /// One unit of `.debug_info`: its header (DWARF 5 §7.5.1) and what its unit DIE says about the
    /// rest of it (bases of indexed forms, base address, line table, compilation directory).
    struct Unit {
        /// Offset of the unit header in `.debug_info`; unit-relative references count from here.
        var offset: Int
        /// One past the unit's last byte.
        var end: Int
        /// Offset of the unit DIE.
        var dieOffset: Int
        /// `DW_UT_*` (DWARF 2–4 units are compile units).
        var unitType: UInt8
        /// Address size, offset size and version.
        var encoding: Encoding
        /// Offset of the unit's abbreviation table in `.debug_abbrev`.
        var abbreviationOffset: Int
        /// Index of the decoded abbreviation table in `Input.tables`.
        var table = 0

        // From the unit DIE.

        /// Offset of the unit DIE's first child (or of what follows it when it has none).
        var childrenOffset = 0
        /// Whether the unit DIE has children.
        var hasChildren = false
        /// Whether the unit is extracted: not a type unit nor a skeleton of split DWARF.
        var isExtracted = false
        /// `DW_AT_str_offsets_base` (DWARF 5 §7.26: defaults past the contribution header).
        var stringOffsetsBase = 0
        /// `DW_AT_addr_base` (DWARF 5 §7.27).
        var addressBase = 0
        /// `DW_AT_rnglists_base` (DWARF 5 §7.28).
        var rangeListsBase = 0
        /// The unit's `DW_AT_low_pc`: the base of its range lists (DWARF 5 §2.17.3).
        var baseAddress: UInt64 = 0
        /// `DW_AT_comp_dir` as a string reference (0 when absent).
        var compilationDirectory: UInt64 = 0
        /// `DW_AT_stmt_list`, or -1.
        var lineTableOffset = -1
        /// Bytes of `.debug_line` the unit's table takes by its length field, cut at the section's
        /// end (0 without a table, or for a table outside the section); set by the unit scan.
        var lineTableSize = 0

        /// Reads the unit header at `offset`.
        init(_ info: Bytes, at offset: Int) throws(FormatError) {
            self.offset = offset
            var cursor = offset
            var length = UInt64(try info.u32(&cursor, info.count))
            var offsetSize = 4
            // DWARF 5 §7.4: 0xffffffff introduces 64-bit DWARF; 0xfffffff0… are reserved.
            if length == 0xffff_ffff {
                length = try info.u64(&cursor, info.count)
                offsetSize = 8
            } else if length >= 0xffff_fff0 {
                throw info.invalid(offset, "reserved unit length 0x\(String(length, radix: 16))")
            }
            guard length <= UInt64(info.count - cursor) else { throw info.truncated(offset, "unit") }
            end = cursor + Int(length)
            let version = try info.u16(&cursor, end)
            guard (2...5).contains(version) else {
                throw FormatError(.unsupported, "DWARF version \(version) unit in .debug_info", offset: UInt64(offset))
            }
            var addressSize: UInt8
            if version >= 5 {
                unitType = try info.u8(&cursor, end)
                addressSize = try info.u8(&cursor, end)
                abbreviationOffset = try ByteReader.int(try info.offsetValue(&cursor, end, is64: offsetSize == 8),
                                                        "abbreviation offset")
                switch unitType {
                case UnitType.compile, UnitType.partial:
                    break
                case UnitType.skeleton, UnitType.splitCompile:
                    try info.need(cursor, 8, end)
                    cursor += 8 // dwo_id
                case UnitType.type, UnitType.splitType:
                    try info.need(cursor, 8 + offsetSize, end)
                    cursor += 8 + offsetSize // type_signature, type_offset
                default:
                    throw info.invalid(offset, "unknown unit type 0x\(String(unitType, radix: 16))")
                }
            } else {
                unitType = UnitType.compile
                abbreviationOffset = try ByteReader.int(try info.offsetValue(&cursor, end, is64: offsetSize == 8),
                                                        "abbreviation offset")
                addressSize = try info.u8(&cursor, end)
            }
            guard [1, 2, 4, 8].contains(addressSize) else {
                throw info.invalid(offset, "unsupported address size \(addressSize)")
            }
            dieOffset = cursor
            encoding = Encoding(addressSize: Int(addressSize), offsetSize: offsetSize, version: version)
        }

        /// Whether `offset` can start a DIE of this unit.
        @inline(__always)
        func contains(die offset: Int) -> Bool {
            offset >= dieOffset && offset < end
        }
    }
}
