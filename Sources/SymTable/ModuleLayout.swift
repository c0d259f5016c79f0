import SymBytes

/// How a module lies in memory, from its ELF program headers: what a table needs to place
/// addresses without the ELF file (the server has tables, not binaries). Recorded in `.csym`
/// version 3 on (`docs/csym-format.md`, "Module layout").
public struct ModuleLayout: Sendable, Equatable {
    /// One `PT_LOAD` segment.
    public struct Segment: Sendable, Equatable {
        /// `p_vaddr`.
        public var virtualAddress: UInt64
        /// `p_memsz`.
        public var memorySize: UInt64
        /// `p_offset`.
        public var fileOffset: UInt64
        /// `p_flags` (`PF_X` = 1, `PF_W` = 2, `PF_R` = 4).
        public var flags: UInt32

        /// Creates a segment.
        public init(virtualAddress: UInt64, memorySize: UInt64, fileOffset: UInt64, flags: UInt32) {
            self.virtualAddress = virtualAddress
            self.memorySize = memorySize
            self.fileOffset = fileOffset
            self.flags = flags
        }

        /// Whether the segment holds code (`PF_X`).
        public var isExecutable: Bool { flags & 1 != 0 }

        /// The addresses the segment covers (up to the top of the address space when it would wrap).
        public var addresses: Range<UInt64> {
            let (end, overflow) = virtualAddress.addingReportingOverflow(memorySize)
            return virtualAddress..<(overflow ? UInt64.max : end)
        }
    }

    /// The first `PT_LOAD`'s `p_vaddr`, aligned down to its page: where the module's mapping
    /// starts in file virtual addresses (mapping-relative offsets are added to it).
    public var mappingBase: UInt64
    /// The first `PT_LOAD`'s `p_offset`, aligned down to the same page.
    public var mappingOffset: UInt64
    /// The `PT_LOAD` segments, in program-header order.
    public var segments: [Segment]

    /// Creates a layout.
    public init(mappingBase: UInt64, mappingOffset: UInt64, segments: [Segment]) {
        self.mappingBase = mappingBase
        self.mappingOffset = mappingOffset
        self.segments = segments
    }

    /// The address ranges of the executable segments.
    public var codeRanges: [Range<UInt64>] {
        segments.filter(\.isExecutable).map(\.addresses)
    }

    /// Most segments a table records (ELF files have a handful of `PT_LOAD`s).
    public static let maximumSegments = 1024

    /// Bytes of the fixed part of the record: mapping base, mapping offset, segment count, reserved.
    static let fixedSize = 24
    /// Bytes of one segment: address, memory size, file offset, flags, reserved.
    static let segmentSize = 32

    /// The record's bytes (its size: `fixedSize + segments.count * segmentSize`; at most
    /// `maximumSegments` segments are recorded).
    func encoded() -> [UInt8] {
        let kept = segments.prefix(Self.maximumSegments)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.fixedSize + kept.count * Self.segmentSize)
        bytes.appendLittleEndian(mappingBase)
        bytes.appendLittleEndian(mappingOffset)
        bytes.appendLittleEndian(UInt32(kept.count))
        bytes.appendLittleEndian(UInt32(0))
        for segment in kept {
            bytes.appendLittleEndian(segment.virtualAddress)
            bytes.appendLittleEndian(segment.memorySize)
            bytes.appendLittleEndian(segment.fileOffset)
            bytes.appendLittleEndian(segment.flags)
            bytes.appendLittleEndian(UInt32(0))
        }
        return bytes
    }

    /// Reads the record in `extent` of a table (nil when the section is empty: no layout was
    /// recorded). Every count is checked against the section's size.
    static func decode(_ reader: ByteReader, offset: Int, size: Int) throws(FormatError) -> ModuleLayout? {
        guard size > 0 else { return nil }
        guard size >= fixedSize else {
            throw FormatError(.truncated, "module layout section is \(size) bytes, under \(fixedSize)", offset: UInt64(offset))
        }
        let count = Int(try reader.u32(at: offset + 16))
        guard count <= maximumSegments, size == fixedSize + count * segmentSize else {
            throw FormatError(.invalidValue, "module layout of \(count) segments does not fill its \(size) bytes",
                              offset: UInt64(offset + 16))
        }
        guard try reader.u32(at: offset + 20) == 0 else {
            throw FormatError(.invalidValue, "reserved module layout field is not zero", offset: UInt64(offset + 20))
        }
        var segments: [Segment] = []
        segments.reserveCapacity(count)
        for index in 0..<count {
            let at = offset + fixedSize + index * segmentSize
            guard try reader.u32(at: at + 28) == 0 else {
                throw FormatError(.invalidValue, "reserved segment field is not zero", offset: UInt64(at + 28))
            }
            segments.append(Segment(virtualAddress: try reader.u64(at: at), memorySize: try reader.u64(at: at + 8),
                                    fileOffset: try reader.u64(at: at + 16), flags: try reader.u32(at: at + 24)))
        }
        return ModuleLayout(mappingBase: try reader.u64(at: offset), mappingOffset: try reader.u64(at: offset + 8),
                            segments: segments)
    }
}
