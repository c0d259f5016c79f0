// The raw DWARF codes the reader understands (DWARF 5 §7.5–§7.22, plus the GNU extensions gcc and
// dwz emit). Spec names stay in this raw layer; the rest of the code reads them as `Tag.subprogram`.

extension DWARFReader {
    /// DIE tags (DWARF 5 §7.5.3, table 7.3).
    enum Tag {
        static let classType: UInt64 = 0x02
        static let lexicalBlock: UInt64 = 0x0b
        static let compileUnit: UInt64 = 0x11
        static let structureType: UInt64 = 0x13
        static let unionType: UInt64 = 0x17
        static let inlinedSubroutine: UInt64 = 0x1d
        static let module: UInt64 = 0x1e
        static let catchBlock: UInt64 = 0x25
        static let subprogram: UInt64 = 0x2e
        static let tryBlock: UInt64 = 0x32
        static let interfaceType: UInt64 = 0x38
        static let namespace: UInt64 = 0x39
        static let partialUnit: UInt64 = 0x3c
        static let typeUnit: UInt64 = 0x41
        static let skeletonUnit: UInt64 = 0x4a
    }

    /// Attribute names (DWARF 5 §7.5.4, table 7.5).
    enum Attribute {
        static let sibling: UInt64 = 0x01
        static let name: UInt64 = 0x03
        static let stmtList: UInt64 = 0x10
        static let lowPC: UInt64 = 0x11
        static let highPC: UInt64 = 0x12
        static let compDir: UInt64 = 0x1b
        static let abstractOrigin: UInt64 = 0x31
        static let declaration: UInt64 = 0x3c
        static let specification: UInt64 = 0x47
        static let ranges: UInt64 = 0x55
        static let callColumn: UInt64 = 0x57
        static let callFile: UInt64 = 0x58
        static let callLine: UInt64 = 0x59
        static let linkageName: UInt64 = 0x6e
        static let strOffsetsBase: UInt64 = 0x72
        static let addrBase: UInt64 = 0x73
        static let rnglistsBase: UInt64 = 0x74
        static let dwoName: UInt64 = 0x76
        static let mipsLinkageName: UInt64 = 0x2007
        static let gnuDWOName: UInt64 = 0x2130
        static let gnuDWOID: UInt64 = 0x2131
    }

    /// Attribute forms (DWARF 5 §7.5.6, table 7.6, and GNU extensions).
    enum Form {
        static let addr: UInt16 = 0x01
        static let block2: UInt16 = 0x03
        static let block4: UInt16 = 0x04
        static let data2: UInt16 = 0x05
        static let data4: UInt16 = 0x06
        static let data8: UInt16 = 0x07
        static let string: UInt16 = 0x08
        static let block: UInt16 = 0x09
        static let block1: UInt16 = 0x0a
        static let data1: UInt16 = 0x0b
        static let flag: UInt16 = 0x0c
        static let sdata: UInt16 = 0x0d
        static let strp: UInt16 = 0x0e
        static let udata: UInt16 = 0x0f
        static let refAddr: UInt16 = 0x10
        static let ref1: UInt16 = 0x11
        static let ref2: UInt16 = 0x12
        static let ref4: UInt16 = 0x13
        static let ref8: UInt16 = 0x14
        static let refUdata: UInt16 = 0x15
        static let indirect: UInt16 = 0x16
        static let secOffset: UInt16 = 0x17
        static let exprloc: UInt16 = 0x18
        static let flagPresent: UInt16 = 0x19
        static let strx: UInt16 = 0x1a
        static let addrx: UInt16 = 0x1b
        static let refSup4: UInt16 = 0x1c
        static let strpSup: UInt16 = 0x1d
        static let data16: UInt16 = 0x1e
        static let lineStrp: UInt16 = 0x1f
        static let refSig8: UInt16 = 0x20
        static let implicitConst: UInt16 = 0x21
        static let loclistx: UInt16 = 0x22
        static let rnglistx: UInt16 = 0x23
        static let refSup8: UInt16 = 0x24
        static let strx1: UInt16 = 0x25
        static let strx2: UInt16 = 0x26
        static let strx3: UInt16 = 0x27
        static let strx4: UInt16 = 0x28
        static let addrx1: UInt16 = 0x29
        static let addrx2: UInt16 = 0x2a
        static let addrx3: UInt16 = 0x2b
        static let addrx4: UInt16 = 0x2c
        static let gnuAddrIndex: UInt16 = 0x1f01
        static let gnuStrIndex: UInt16 = 0x1f02
        static let gnuRefAlt: UInt16 = 0x1f20
        static let gnuStrpAlt: UInt16 = 0x1f21
        /// Stands for any form code this reader does not know (it cannot be skipped).
        static let unknown: UInt16 = 0xffff
    }

    /// Unit types of DWARF 5 unit headers (§7.5.1, table 7.2).
    enum UnitType {
        static let compile: UInt8 = 0x01
        static let type: UInt8 = 0x02
        static let partial: UInt8 = 0x03
        static let skeleton: UInt8 = 0x04
        static let splitCompile: UInt8 = 0x05
        static let splitType: UInt8 = 0x06
    }

    /// Range list entry kinds of `.debug_rnglists` (DWARF 5 §7.25, table 7.30).
    enum RangeListEntry {
        static let endOfList: UInt8 = 0x00
        static let baseAddressx: UInt8 = 0x01
        static let startxEndx: UInt8 = 0x02
        static let startxLength: UInt8 = 0x03
        static let offsetPair: UInt8 = 0x04
        static let baseAddress: UInt8 = 0x05
        static let startEnd: UInt8 = 0x06
        static let startLength: UInt8 = 0x07
    }
}
