/// Constants of the `.csym` byte layout (versions 1 to 5), shared by the writer and the reader.
///
/// The layout is documented field by field in `docs/csym-format.md`; keep the two in step.
enum TableFormat {
    /// The four bytes every table starts with.
    static let magic: [UInt8] = [0x43, 0x53, 0x59, 0x4D]  // "CSYM"
    /// The version the writer writes.
    static let version: UInt16 = 5
    /// The versions the reader reads.
    static let readableVersions: ClosedRange<UInt16> = 1...5
    /// Size of the fixed header of the version the writer writes, including the section directory.
    static let headerSize = headerSize(version: version)

    /// Size of the fixed header of `version` (1 to 5): the fixed fields and one directory entry per
    /// section.
    static func headerSize(version: UInt16) -> Int {
        Field.sectionDirectory + sectionCount(version: version) * directoryEntrySize
    }

    /// Number of sections of `version` (1 to 5): version 2 added the demangled names, version 3
    /// the module layout, version 4 the unwind rules (version 5 adds DWARF expressions to them,
    /// no section).
    static func sectionCount(version: UInt16) -> Int {
        switch version {
        case 1: 8
        case 2: 9
        case 3: 10
        default: 11
        }
    }

    /// log2 of the function-name records per block of stored demangled names (64), in the header.
    static let demangledBlockShift: UInt8 = 6
    /// Largest block shift a reader accepts (1024 records a block).
    static let maximumDemangledBlockShift: UInt8 = 10
    /// Longest stored demangled name: a longer one is not stored (lookup demangles it as in v1).
    static let maximumStoredNameLength = 1 << 16
    /// The length field of a record without a stored demangled name.
    static let noStoredName = UInt32.max
    /// Most bytes one block of stored demangled names decompresses to: a reader refuses a frame
    /// that declares more, so a hostile table cannot make it allocate more.
    static let maximumDemangledBlockSize = 8 << 20
    /// Widest variable-width field, in bytes.
    static let maximumFieldWidth = 4

    /// Header flag bits.
    enum Flag {
        /// Range starts are `UInt32` deltas from `addressBase` instead of absolute `UInt64`s.
        static let compactRangeStarts: UInt16 = 1
        /// Every flag bit this version defines.
        static let known: UInt16 = compactRangeStarts
    }

    /// Byte offsets of the header fields.
    enum Field {
        static let version = 4
        static let flags = 6
        static let machine = 8
        static let is64Bit = 10
        static let sectionCount = 11
        static let stringWidth = 12
        static let fileWidth = 13
        static let lineWidth = 14
        static let columnWidth = 15
        static let nameWidth = 16
        static let scopeWidth = 17
        static let callSiteWidth = 18
        /// Version 1: reserved, 0. Version 2: log2 of the records per block of demangled names.
        static let demangledBlockShift = 19
        static let moduleName = 20
        static let addressBase = 24
        static let stringCount = 32
        static let fileCount = 36
        static let nameCount = 40
        static let scopeCount = 44
        static let callSiteCount = 48
        static let rangeCount = 52
        static let functionCount = 56
        static let inlinedScopeCount = 64
        static let lineRowCount = 72
        static let symbolCount = 80
        static let sectionDirectory = 88
    }

    /// The sections, in directory order (which is also the order the writer lays them out in).
    enum Section: Int, CaseIterable {
        case buildID
        case rangeStarts
        case rangeRecords
        case scopes
        case callSites
        case files
        case names
        case strings
        /// Version 2 on: demangled forms stored at dump time, compressed in blocks of records.
        case demangledNames
        /// Version 3 on: the module's layout (`ModuleLayout`); empty when not known.
        case moduleLayout
        /// Version 4 on: the module's unwind rules (`UnwindRules`); empty when it has none.
        case unwindRules

        /// Name used in error messages.
        var name: String {
            switch self {
            case .buildID: "build-id"
            case .rangeStarts: "range starts"
            case .rangeRecords: "range records"
            case .scopes: "scope records"
            case .callSites: "call-site records"
            case .files: "files"
            case .names: "function names"
            case .strings: "strings"
            case .demangledNames: "demangled names"
            case .moduleLayout: "module layout"
            case .unwindRules: "unwind rules"
            }
        }
    }

    /// Bytes of one directory entry: offset and size, both `UInt64`.
    static let directoryEntrySize = 16

    /// Caller field value of an outermost frame that comes from a DWARF scope.
    static let callerNone: UInt32 = 0
    /// Caller field value (scope records only) of a frame named from the ELF symbol table only.
    static let callerSymbolOnly: UInt32 = 1
    /// Caller field values at or above this refer to call-site record `value - callerBias`.
    static let callerBias: UInt32 = 2

    /// The fewest bytes (0...4) that hold `value`; 0 when every value of the field is zero.
    static func width(for value: UInt32) -> Int {
        switch value {
        case 0: 0
        case ..<0x100: 1
        case ..<0x1_0000: 2
        case ..<0x100_0000: 3
        default: 4
        }
    }
}
