import SymBytes

extension DWARFReader {
    /// One abbreviation table of `.debug_abbrev` (DWARF 5 §7.5.3), decoded once for one unit
    /// encoding into a map from codes to abbreviations of the file's `Abbreviations`, so walking
    /// a DIE costs two array lookups and no dictionary.
    struct AbbreviationTable {
        /// What the DIE walk does with DIEs of an abbreviation.
        enum Action: UInt8 {
            /// Neither a scope nor able to hold one: skip the DIE and its children.
            case skip
            /// May hold scopes (namespaces, blocks, types with member functions): walk the children.
            case descend
            /// `DW_TAG_subprogram`.
            case subprogram
            /// `DW_TAG_inlined_subroutine`.
            case inlinedSubroutine
        }

        /// Attributes the reader looks at, decided once per abbreviation instead of once per DIE.
        enum Role: UInt8 {
            case other, sibling, name, linkageName, mipsLinkageName, lowPC, highPC, ranges, specification,
                 abstractOrigin, declaration, callFile, callLine, callColumn, compDir, stmtList,
                 strOffsetsBase, addrBase, rnglistsBase, splitUnit
        }

        /// One attribute specification (8 bytes).
        struct Spec: Hashable {
            /// `DW_FORM_*`, or `Form.unknown`.
            var form: UInt16
            /// How the reader uses the attribute.
            var role: Role
            /// Whether `constant` is an index into `largeConstants` rather than the value itself.
            var isLargeConstant: Bool
            /// The value of a `DW_FORM_implicit_const` attribute when it fits in 32 bits, else its
            /// index in the table's `largeConstants`.
            var constant: Int32

            /// The value of a `DW_FORM_implicit_const` attribute (0 for other forms).
            @inline(__always)
            func implicitConst(_ largeConstants: [Int64]) -> Int64 {
                isLargeConstant ? largeConstants[Int(constant)] : Int64(constant)
            }
        }

        /// One abbreviation (16 bytes).
        struct Entry: Hashable {
            /// `DW_TAG_*`, saturated at `UInt32.max` (no tag the reader compares with is that large;
            /// `action` was decided from the full value).
            var tag: UInt32
            /// Index of the first attribute in `specs`.
            var firstSpec: Int32
            /// Number of attributes (at most `maximumAttributes`).
            var specCount: UInt16
            /// Total size of the attribute values when every form has a fixed size, else -1
            /// (at most `maximumAttributes` × 16).
            var fixedSize: Int16
            /// What the walk does with such DIEs.
            var action: Action
            /// Whether DIEs of this abbreviation have children.
            var hasChildren: Bool
            /// Whether DIEs carry `DW_AT_sibling` (lets the walk jump over skipped children).
            var hasSibling: Bool
        }

        /// Index in `Abbreviations.entries` by abbreviation code for dense codes (the usual 1…n),
        /// -1 when unused.
        var dense: [Int32] = []
        /// Index in `Abbreviations.entries` by code when the codes are too sparse for `dense`.
        var sparse: [UInt64: Int32] = [:]

        /// Whether DIEs of this table may refer to DIEs of other units: a `DW_FORM_ref_addr`
        /// attribute, or `DW_FORM_indirect`, which may name that form.
        private(set) var mayReferToOtherUnits = false

        /// Bytes of `.debug_abbrev` the table was decoded from.
        private(set) var byteCount = 0

        /// No DIE can reasonably carry more attributes; bounds the work per DIE on hostile input.
        static let maximumAttributes = 256

        /// The entry index for an abbreviation code, or -1.
        @inline(__always)
        func index(of code: UInt64) -> Int {
            if code < UInt64(dense.count) { return Int(dense[Int(code)]) }
            if sparse.isEmpty { return -1 }
            return Int(sparse[code] ?? -1)
        }

        /// Decodes the table at `offset` for units of `encoding` into `abbreviations`; `budget`
        /// bounds the bytes decoded over all tables (tables of hostile files may overlap).
        init(_ abbrev: Bytes, at offset: Int, encoding: Encoding, budget: inout Int,
             into abbreviations: inout Abbreviations) throws(FormatError) {
            let limit = abbrev.count
            guard offset >= 0, offset < limit else {
                throw FormatError(.truncated, "abbreviation table offset 0x\(String(offset, radix: 16)) is outside .debug_abbrev",
                                  offset: UInt64(clamping: offset))
            }
            var cursor = offset
            var codes: [UInt64] = []
            var indices: [Int32] = []
            var seen = Set<UInt64>()
            var specs: [Spec] = []
            while true {
                let codeOffset = cursor
                let code = try abbrev.uleb(&cursor, limit)
                if code == 0 { break }
                let tag = try abbrev.uleb(&cursor, limit)
                let children = try abbrev.u8(&cursor, limit)
                var entry = Entry(tag: UInt32(clamping: tag), firstSpec: 0, specCount: 0, fixedSize: 0,
                                  action: Self.action(for: tag), hasChildren: children != 0, hasSibling: false)
                var fixed = 0
                specs.removeAll(keepingCapacity: true)
                while true {
                    let attribute = try abbrev.uleb(&cursor, limit)
                    let formCode = try abbrev.uleb(&cursor, limit)
                    if attribute == 0 && formCode == 0 { break }
                    let form = formCode < UInt64(Form.unknown) ? UInt16(formCode) : Form.unknown
                    // DWARF 5 §7.5.3: an implicit constant is stored in the abbreviation itself.
                    let constant = form == Form.implicitConst ? try abbrev.sleb(&cursor, limit) : 0
                    guard entry.specCount < UInt16(Self.maximumAttributes) else {
                        throw FormatError(.limitExceeded, "abbreviation \(code) has more than \(Self.maximumAttributes) attributes",
                                          offset: UInt64(codeOffset))
                    }
                    let role = Self.role(of: attribute)
                    if role == .sibling { entry.hasSibling = true }
                    if let small = Int32(exactly: constant) {
                        specs.append(Spec(form: form, role: role, isLargeConstant: false, constant: small))
                    } else {
                        specs.append(abbreviations.largeConstantSpec(form: form, role: role, value: constant))
                    }
                    entry.specCount += 1
                    let size = encoding.fixedSize(of: form)
                    fixed = (fixed < 0 || size < 0) ? -1 : fixed + size
                }
                entry.fixedSize = Int16(fixed)
                // A repeated code keeps its first definition, as consumers that stop at the first match do.
                if seen.insert(code).inserted {
                    codes.append(code)
                    indices.append(abbreviations.intern(entry, specs: specs))
                    if specs.contains(where: { $0.form == Form.refAddr || $0.form == Form.indirect }) {
                        mayReferToOtherUnits = true
                    }
                }
            }
            byteCount = cursor - offset
            budget -= byteCount
            guard budget >= 0 else {
                throw FormatError(.limitExceeded, "abbreviation tables overlap too much to decode", offset: UInt64(offset))
            }
            let maximum = codes.max() ?? 0
            if maximum < UInt64(2 * codes.count + 256) {
                dense = [Int32](repeating: -1, count: Int(maximum) + 1)
                for (code, index) in zip(codes, indices) { dense[Int(code)] = index }
            } else {
                for (code, index) in zip(codes, indices) { sparse[code] = index }
            }
        }

        /// The walk's action for a tag; the same tags the libdwarf extractor descends into.
        static func action(for tag: UInt64) -> Action {
            switch tag {
            case Tag.subprogram: .subprogram
            case Tag.inlinedSubroutine: .inlinedSubroutine
            case Tag.lexicalBlock, Tag.namespace, Tag.module, Tag.classType, Tag.structureType, Tag.unionType,
                 Tag.tryBlock, Tag.catchBlock, Tag.interfaceType:
                .descend
            default: .skip
            }
        }

        /// The role of an attribute.
        static func role(of attribute: UInt64) -> Role {
            switch attribute {
            case Attribute.sibling: .sibling
            case Attribute.name: .name
            case Attribute.linkageName: .linkageName
            case Attribute.mipsLinkageName: .mipsLinkageName
            case Attribute.lowPC: .lowPC
            case Attribute.highPC: .highPC
            case Attribute.ranges: .ranges
            case Attribute.specification: .specification
            case Attribute.abstractOrigin: .abstractOrigin
            case Attribute.declaration: .declaration
            case Attribute.callFile: .callFile
            case Attribute.callLine: .callLine
            case Attribute.callColumn: .callColumn
            case Attribute.compDir: .compDir
            case Attribute.stmtList: .stmtList
            case Attribute.strOffsetsBase: .strOffsetsBase
            case Attribute.addrBase: .addrBase
            case Attribute.rnglistsBase: .rnglistsBase
            case Attribute.dwoName, Attribute.gnuDWOName, Attribute.gnuDWOID: .splitUnit
            default: .other
            }
        }
    }
}
