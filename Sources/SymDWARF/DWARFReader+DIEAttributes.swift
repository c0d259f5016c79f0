import SymBytes

extension DWARFReader {
    /// The attributes of one DIE the reader uses, read in one pass over its abbreviation. Values
    /// stay raw (form and value) until needed, so DIEs that turn out to be uninteresting cost no
    /// string or address lookups.
    struct DIEAttributes {
        /// `DW_AT_low_pc` (form 0 when absent).
        var lowPC: UInt64 = 0
        var lowPCForm: UInt16 = 0
        /// `DW_AT_high_pc`: an address, or an offset from `low_pc` when of constant class.
        var highPC: UInt64 = 0
        var highPCForm: UInt16 = 0
        /// `DW_AT_ranges`: a section offset or, with `DW_FORM_rnglistx`, an index.
        var ranges: UInt64 = 0
        var rangesForm: UInt16 = 0
        /// `DW_AT_name`.
        var name: UInt64 = 0
        var nameForm: UInt16 = 0
        /// `DW_AT_linkage_name`.
        var linkageName: UInt64 = 0
        var linkageNameForm: UInt16 = 0
        /// `DW_AT_MIPS_linkage_name` (older gcc and clang).
        var mipsLinkageName: UInt64 = 0
        var mipsLinkageNameForm: UInt16 = 0
        /// `DW_AT_specification` and `DW_AT_abstract_origin` as `.debug_info` offsets, or -1.
        var specification = -1
        var abstractOrigin = -1
        /// `DW_AT_sibling` as a `.debug_info` offset, or -1.
        var sibling = -1
        /// Whether `DW_AT_declaration` is present (whatever its value, as libdwarf's `dwarf_hasattr`).
        var declaration = false
        /// `DW_AT_call_file`, `DW_AT_call_line`, `DW_AT_call_column` (constants).
        var callFile: UInt64 = 0
        var hasCallFile = false
        var callLine: UInt64 = 0
        var callColumn: UInt64 = 0
        /// Unit DIE attributes.
        var compilationDirectory: UInt64 = 0
        var compilationDirectoryForm: UInt16 = 0
        var lineTableOffset: UInt64 = 0
        var hasLineTable = false
        var stringOffsetsBase: UInt64?
        var addressBase: UInt64?
        var rangeListsBase: UInt64?
        /// Whether the DIE names a split-DWARF object (`DW_AT_dwo_name`, `DW_AT_GNU_dwo_name/id`).
        var isSplitUnit = false

        /// Reads the attributes of a DIE of abbreviation `entry` of `abbreviations`, starting after
        /// its code.
        @inline(__always)
        init(_ info: Bytes, _ entry: AbbreviationTable.Entry, _ abbreviations: Abbreviations,
             _ offset: inout Int, _ unit: Unit) throws(FormatError) {
            try self.init(info, entry, abbreviations.specs, abbreviations.largeConstants, &offset, unit)
        }

        /// Reads the attributes of a DIE of abbreviation `entry`, starting after its code (the
        /// walk's loop passes the arrays of `Abbreviations` it holds).
        @inline(__always)
        init(_ info: Bytes, _ entry: AbbreviationTable.Entry, _ specs: [AbbreviationTable.Spec],
             _ largeConstants: [Int64], _ offset: inout Int, _ unit: Unit) throws(FormatError) {
            let first = Int(entry.firstSpec)
            let limit = unit.end
            let encoding = unit.encoding
            for index in first..<(first + Int(entry.specCount)) {
                let spec = specs[index]
                if spec.role == .other {
                    try info.skip(form: spec.form, &offset, limit, encoding)
                    continue
                }
                var form = spec.form
                let value = try info.value(form: &form, implicitConst: spec.implicitConst(largeConstants), &offset, limit, encoding)
                switch spec.role {
                case .other:
                    break
                case .sibling:
                    sibling = Self.reference(form, value, unit)
                case .name:
                    (name, nameForm) = (value, form)
                case .linkageName:
                    (linkageName, linkageNameForm) = (value, form)
                case .mipsLinkageName:
                    (mipsLinkageName, mipsLinkageNameForm) = (value, form)
                case .lowPC:
                    (lowPC, lowPCForm) = (value, form)
                case .highPC:
                    (highPC, highPCForm) = (value, form)
                case .ranges:
                    (ranges, rangesForm) = (value, form)
                case .specification:
                    specification = Self.reference(form, value, unit)
                case .abstractOrigin:
                    abstractOrigin = Self.reference(form, value, unit)
                case .declaration:
                    declaration = true
                case .callFile:
                    if FormClass.isConstant(form) { (callFile, hasCallFile) = (value, true) }
                case .callLine:
                    if FormClass.isConstant(form) { callLine = value }
                case .callColumn:
                    if FormClass.isConstant(form) { callColumn = value }
                case .compDir:
                    (compilationDirectory, compilationDirectoryForm) = (value, form)
                case .stmtList:
                    if form == Form.secOffset || form == Form.data4 || form == Form.data8 || form == Form.udata {
                        (lineTableOffset, hasLineTable) = (value, true)
                    }
                case .strOffsetsBase:
                    stringOffsetsBase = value
                case .addrBase:
                    addressBase = value
                case .rnglistsBase:
                    rangeListsBase = value
                case .splitUnit:
                    isSplitUnit = true
                }
            }
        }

        /// A reference value as a `.debug_info` offset, or -1 for references into other files
        /// (type signatures, supplementary and alternate files: treated as absent).
        @inline(__always)
        static func reference(_ form: UInt16, _ value: UInt64, _ unit: Unit) -> Int {
            if FormClass.isUnitReference(form) {
                guard value < UInt64(Int.max - unit.offset) else { return -1 }
                return unit.offset + Int(value)
            }
            if form == Form.refAddr {
                return value < UInt64(Int.max) ? Int(value) : -1
            }
            return -1
        }
    }
}
