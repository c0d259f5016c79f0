import SymBytes

extension DWARFReader {
    /// What the size of a form's value depends on: the unit's address size, offset size and version
    /// (DWARF 5 §7.5.6; `DW_FORM_ref_addr` is address-sized in DWARF 2).
    struct Encoding: Hashable {
        /// Size of a target address in bytes (1, 2, 4 or 8).
        var addressSize: Int
        /// 4 in 32-bit DWARF, 8 in 64-bit DWARF.
        var offsetSize: Int
        /// The unit's DWARF version.
        var version: UInt16

        /// Whether section offsets are 8 bytes (64-bit DWARF).
        var is64: Bool { offsetSize == 8 }

        /// Size of a `DW_FORM_ref_addr` value.
        var refAddressSize: Int { version <= 2 ? addressSize : offsetSize }

        /// The byte size every value of `form` has, or -1 when it varies (LEB128, strings, blocks,
        /// indirect) or the form is unknown.
        func fixedSize(of form: UInt16) -> Int {
            switch form {
            case Form.flagPresent, Form.implicitConst: return 0
            case Form.data1, Form.ref1, Form.flag, Form.strx1, Form.addrx1: return 1
            case Form.data2, Form.ref2, Form.strx2, Form.addrx2: return 2
            case Form.strx3, Form.addrx3: return 3
            case Form.data4, Form.ref4, Form.strx4, Form.addrx4, Form.refSup4: return 4
            case Form.data8, Form.ref8, Form.refSig8, Form.refSup8: return 8
            case Form.data16: return 16
            case Form.addr: return addressSize
            case Form.refAddr: return refAddressSize
            case Form.strp, Form.secOffset, Form.lineStrp, Form.strpSup, Form.gnuRefAlt, Form.gnuStrpAlt:
                return offsetSize
            default: return -1
            }
        }
    }
}

extension DWARFReader.Bytes {
    typealias Form = DWARFReader.Form

    /// Skips one attribute value of `form` (DWARF 5 §7.5.6).
    @inline(__always)
    func skip(form: UInt16, _ offset: inout Int, _ limit: Int, _ encoding: DWARFReader.Encoding) throws(FormatError) {
        let size = encoding.fixedSize(of: form)
        if size >= 0 {
            try need(offset, size, limit)
            offset &+= size
            return
        }
        try skipVariable(form: form, &offset, limit, encoding)
    }

    /// `skip` for forms without a fixed size.
    func skipVariable(form: UInt16, _ offset: inout Int, _ limit: Int,
                      _ encoding: DWARFReader.Encoding) throws(FormatError) {
        var form = form
        // DW_FORM_indirect names the real form inline; allow a few levels, never a loop.
        for _ in 0..<4 {
            switch form {
            case Form.udata, Form.sdata, Form.refUdata, Form.strx, Form.addrx, Form.loclistx, Form.rnglistx,
                 Form.gnuAddrIndex, Form.gnuStrIndex:
                try skipLEB(&offset, limit)
                return
            case Form.string:
                try skipString(&offset, limit)
                return
            case Form.block1:
                let length = Int(try u8(&offset, limit))
                try need(offset, length, limit)
                offset &+= length
                return
            case Form.block2:
                let length = Int(try u16(&offset, limit))
                try need(offset, length, limit)
                offset &+= length
                return
            case Form.block4:
                let length = Int(try u32(&offset, limit))
                try need(offset, length, limit)
                offset &+= length
                return
            case Form.block, Form.exprloc:
                let start = offset
                let length = try uleb(&offset, limit)
                guard length <= UInt64(limit - offset) else { throw truncated(start, "block") }
                offset &+= Int(length)
                return
            case Form.indirect:
                form = try indirectForm(&offset, limit)
                let size = encoding.fixedSize(of: form)
                if size >= 0 {
                    try need(offset, size, limit)
                    offset &+= size
                    return
                }
            default:
                throw invalid(offset, "unknown attribute form 0x\(String(form, radix: 16))")
            }
        }
        throw invalid(offset, "DW_FORM_indirect nested too deeply")
    }

    /// Reads the form code of a `DW_FORM_indirect` value.
    func indirectForm(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt16 {
        let start = offset
        let code = try uleb(&offset, limit)
        guard code < UInt64(Form.unknown) else { throw invalid(start, "unknown attribute form 0x\(String(code, radix: 16))") }
        return UInt16(code)
    }

    /// Reads one attribute value as an integer and advances past it; `form` becomes the real form
    /// when it was `DW_FORM_indirect`.
    ///
    /// Constants, addresses, section offsets, indices and references (unit-relative for
    /// `ref1`…`ref_udata`) come back as read; `sdata` and `implicit_const` as their two's-complement
    /// bits; `DW_FORM_string` as the offset of its first byte; blocks, `data16` and `flag_present`
    /// as 0 (and `flag_present` as 1).
    @inline(__always)
    func value(form: inout UInt16, implicitConst: Int64, _ offset: inout Int, _ limit: Int,
               _ encoding: DWARFReader.Encoding) throws(FormatError) -> UInt64 {
        switch form {
        case Form.data1, Form.ref1, Form.flag, Form.strx1, Form.addrx1:
            return UInt64(try u8(&offset, limit))
        case Form.data2, Form.ref2, Form.strx2, Form.addrx2:
            return UInt64(try u16(&offset, limit))
        case Form.strx3, Form.addrx3:
            return UInt64(try u24(&offset, limit))
        case Form.data4, Form.ref4, Form.strx4, Form.addrx4, Form.refSup4:
            return UInt64(try u32(&offset, limit))
        case Form.data8, Form.ref8, Form.refSig8, Form.refSup8:
            return try u64(&offset, limit)
        case Form.strp, Form.secOffset, Form.lineStrp, Form.strpSup, Form.gnuRefAlt, Form.gnuStrpAlt:
            return try offsetValue(&offset, limit, is64: encoding.is64)
        case Form.addr:
            return try address(&offset, limit, size: encoding.addressSize)
        case Form.refAddr:
            return encoding.refAddressSize == 8 ? try u64(&offset, limit)
                : try address(&offset, limit, size: encoding.refAddressSize)
        case Form.udata, Form.refUdata, Form.strx, Form.addrx, Form.loclistx, Form.rnglistx,
             Form.gnuAddrIndex, Form.gnuStrIndex:
            return try uleb(&offset, limit)
        case Form.sdata:
            return UInt64(bitPattern: try sleb(&offset, limit))
        case Form.implicitConst:
            return UInt64(bitPattern: implicitConst)
        case Form.flagPresent:
            return 1
        case Form.string:
            let start = offset
            try skipString(&offset, limit)
            return UInt64(start)
        case Form.indirect:
            var real = try indirectForm(&offset, limit)
            guard real != Form.indirect else { throw invalid(offset, "DW_FORM_indirect names itself") }
            let result = try value(form: &real, implicitConst: implicitConst, &offset, limit, encoding)
            form = real
            return result
        default:
            try skip(form: form, &offset, limit, encoding)
            return 0
        }
    }
}

extension DWARFReader {
    /// Form classes (DWARF 5 §7.5.5) the reader tells apart when interpreting a value.
    enum FormClass {
        /// Whether `form` holds an address (directly or as an index into `.debug_addr`).
        static func isAddress(_ form: UInt16) -> Bool {
            switch form {
            case Form.addr, Form.addrx, Form.addrx1, Form.addrx2, Form.addrx3, Form.addrx4, Form.gnuAddrIndex: true
            default: false
            }
        }

        /// Whether `form` holds an index into `.debug_addr`.
        static func isAddressIndex(_ form: UInt16) -> Bool {
            form != Form.addr && isAddress(form)
        }

        /// Whether `form` holds a constant (the class of `DW_AT_high_pc` as an offset, call lines…).
        static func isConstant(_ form: UInt16) -> Bool {
            switch form {
            case Form.data1, Form.data2, Form.data4, Form.data8, Form.udata, Form.sdata, Form.implicitConst: true
            default: false
            }
        }

        /// Whether `form` holds a reference; `ref1`…`ref_udata` are relative to the unit.
        static func isUnitReference(_ form: UInt16) -> Bool {
            switch form {
            case Form.ref1, Form.ref2, Form.ref4, Form.ref8, Form.refUdata: true
            default: false
            }
        }

        /// Whether `form` holds a string or a string index.
        static func isString(_ form: UInt16) -> Bool {
            switch form {
            case Form.string, Form.strp, Form.lineStrp, Form.strx, Form.strx1, Form.strx2, Form.strx3, Form.strx4,
                 Form.gnuStrIndex:
                true
            default: false
            }
        }
    }
}
