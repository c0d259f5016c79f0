import SymBytes
import SymTable

extension DWARFReader.Input {
    typealias DIEAttributes = DWARFReader.DIEAttributes
    typealias FormClass = DWARFReader.FormClass
    typealias Unit = DWARFReader.Unit

    /// Appends the code ranges of a DIE to `ranges`, dropping empty ones: `[low_pc, high_pc)`
    /// when the DIE has `low_pc`, else its `DW_AT_ranges` list (DWARF 5 §2.17). `budget` (the
    /// walker's remaining work) pays for every list entry, so a hostile file cannot make many DIEs
    /// decode one huge list each.
    func appendCodeRanges(of attributes: DIEAttributes, unit: Unit, to ranges: inout [AddressRange],
                          budget: inout Int) throws(FormatError) {
        if FormClass.isAddress(attributes.lowPCForm) {
            let low = try address(form: attributes.lowPCForm, value: attributes.lowPC, unit: unit)
            let high: UInt64
            if FormClass.isAddress(attributes.highPCForm) {
                high = try address(form: attributes.highPCForm, value: attributes.highPC, unit: unit)
            } else if FormClass.isConstant(attributes.highPCForm) {
                // DWARF 4 §2.17.2: a constant high_pc is the size of the range.
                high = low &+ attributes.highPC
            } else {
                return
            }
            if high > low { ranges.append(AddressRange(start: low, end: high)) }
            return
        }
        guard attributes.rangesForm != 0 else { return }
        if unit.encoding.version >= 5 {
            var offset: Int
            if attributes.rangesForm == DWARFReader.Form.rnglistx {
                offset = try rangeListOffset(index: attributes.ranges, unit: unit)
            } else {
                offset = try ByteReader.int(attributes.ranges, "DW_AT_ranges")
            }
            try appendRangeList(at: &offset, unit: unit, to: &ranges, budget: &budget)
        } else {
            try appendLegacyRanges(at: try ByteReader.int(attributes.ranges, "DW_AT_ranges"), unit: unit,
                                   to: &ranges, budget: &budget)
        }
    }

    /// The `.debug_rnglists` offset of list `index` of the unit (DWARF 5 §7.28: the offsets table
    /// at `DW_AT_rnglists_base` holds offsets relative to that base).
    func rangeListOffset(index: UInt64, unit: Unit) throws(FormatError) -> Int {
        let size = unit.encoding.offsetSize
        guard index < UInt64(rnglists.count / size) else {
            throw rnglists.invalid(unit.rangeListsBase, "range list index \(index) is outside the section")
        }
        var cursor = unit.rangeListsBase &+ Int(index) * size
        let relative = try rnglists.offsetValue(&cursor, rnglists.count, is64: size == 8)
        guard relative < UInt64(rnglists.count) else {
            throw rnglists.invalid(cursor, "range list offset 0x\(String(relative, radix: 16)) is outside the section")
        }
        return unit.rangeListsBase &+ Int(relative)
    }

    /// Decodes a DWARF 5 range list (DWARF 5 §2.17.3, §7.25).
    func appendRangeList(at offset: inout Int, unit: Unit, to ranges: inout [AddressRange],
                         budget: inout Int) throws(FormatError) {
        typealias Entry = DWARFReader.RangeListEntry
        let limit = rnglists.count
        let size = unit.encoding.addressSize
        var base = unit.baseAddress
        while true {
            budget -= DWARFReader.UnitWalker.rangeEntryCost
            guard budget >= 0 else {
                throw FormatError(.limitExceeded, "range lists exceed the work budget", offset: UInt64(offset))
            }
            let kindOffset = offset
            let kind = try rnglists.u8(&offset, limit)
            let start: UInt64
            let end: UInt64
            switch kind {
            case Entry.endOfList:
                return
            case Entry.baseAddressx:
                base = try indexedAddress(try rnglists.uleb(&offset, limit), unit: unit)
                continue
            case Entry.baseAddress:
                base = try rnglists.address(&offset, limit, size: size)
                continue
            case Entry.startxEndx:
                start = try indexedAddress(try rnglists.uleb(&offset, limit), unit: unit)
                end = try indexedAddress(try rnglists.uleb(&offset, limit), unit: unit)
            case Entry.startxLength:
                start = try indexedAddress(try rnglists.uleb(&offset, limit), unit: unit)
                end = start &+ (try rnglists.uleb(&offset, limit))
            case Entry.offsetPair:
                start = base &+ (try rnglists.uleb(&offset, limit))
                end = base &+ (try rnglists.uleb(&offset, limit))
            case Entry.startEnd:
                start = try rnglists.address(&offset, limit, size: size)
                end = try rnglists.address(&offset, limit, size: size)
            case Entry.startLength:
                start = try rnglists.address(&offset, limit, size: size)
                end = start &+ (try rnglists.uleb(&offset, limit))
            default:
                throw rnglists.invalid(kindOffset, "unknown range list entry kind 0x\(String(kind, radix: 16))")
            }
            if end > start { ranges.append(AddressRange(start: start, end: end)) }
        }
    }

    /// Decodes a DWARF 2–4 `.debug_ranges` list: address pairs relative to the base address,
    /// base address selection entries, and a (0, 0) terminator (DWARF 4 §2.17.3).
    func appendLegacyRanges(at offset: Int, unit: Unit, to ranges: inout [AddressRange],
                            budget: inout Int) throws(FormatError) {
        let section = self.ranges
        let size = unit.encoding.addressSize
        let selection: UInt64 = size == 8 ? .max : (1 << UInt64(size * 8)) - 1
        var base = unit.baseAddress
        var cursor = offset
        while true {
            budget -= DWARFReader.UnitWalker.rangeEntryCost
            guard budget >= 0 else {
                throw FormatError(.limitExceeded, "range lists exceed the work budget", offset: UInt64(cursor))
            }
            let begin = try section.address(&cursor, section.count, size: size)
            let end = try section.address(&cursor, section.count, size: size)
            if begin == 0 && end == 0 { return }
            if begin == selection {
                base = end
                continue
            }
            let start = base &+ begin
            let stop = base &+ end
            if stop > start { ranges.append(AddressRange(start: start, end: stop)) }
        }
    }
}
