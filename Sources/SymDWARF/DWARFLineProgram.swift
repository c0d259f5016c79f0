import SymBytes
import SymTable

/// One line number program of `.debug_line` (DWARF 2–5, DWARF 5 §6.2): its header with the
/// directory and file tables, and the state machine that turns its opcodes into rows.
struct DWARFLineProgram {
    /// A file table entry: string references of its name and directory.
    struct File {
        /// `DW_LNCT_path` of the file.
        var name: UInt64
        /// `DW_LNCT_path` of its directory (0 for the compilation directory or when unknown).
        var directory: UInt64
        /// DWARF 5 directory 0: the entry is the compilation directory itself, so no
        /// `DW_AT_comp_dir` goes in front (llvm-symbolizer's rule).
        var directoryIsCompilationDirectory = false
    }

    /// Line table version (2–5).
    let version: UInt16
    /// Offset and address sizes of the program's header.
    let encoding: DWARFReader.Encoding
    /// Offset of the first opcode.
    let programOffset: Int
    /// One past the program's last byte.
    let end: Int
    /// Header fields driving the state machine (DWARF 5 §6.2.4 items 5–9).
    let minimumInstructionLength: UInt64
    let maximumOperationsPerInstruction: UInt64
    let lineBase: Int64
    let lineRange: UInt64
    let opcodeBase: UInt8
    /// Offset of `standard_opcode_lengths` (needed to skip opcodes this reader does not know).
    let standardOpcodeLengths: Int
    /// Directory entries as string references, in table order.
    private(set) var directories: [UInt64] = []
    /// File entries in the order the file register numbers them: from 0 in DWARF 5, from 1 before
    /// (`files[0]` then stands for register value 1).
    private(set) var files: [File] = []

    /// Value of the file register that names `files[0]`.
    var firstFileNumber: UInt64 { version >= 5 ? 0 : 1 }

    /// Reads the header of the program at `offset` for `unit` (which gives the address size before
    /// DWARF 5 and the bases of string index forms).
    init(_ input: DWARFReader.Input, at offset: Int, unit: DWARFReader.Unit) throws(FormatError) {
        let line = input.line
        var cursor = offset
        guard offset < line.count else {
            throw FormatError(.truncated, "line table offset 0x\(String(offset, radix: 16)) is outside .debug_line",
                              offset: UInt64(offset))
        }
        var length = UInt64(try line.u32(&cursor, line.count))
        var offsetSize = 4
        if length == 0xffff_ffff {
            length = try line.u64(&cursor, line.count)
            offsetSize = 8
        } else if length >= 0xffff_fff0 {
            throw line.invalid(offset, "reserved line table length 0x\(String(length, radix: 16))")
        }
        guard length <= UInt64(line.count - cursor) else { throw line.truncated(offset, "line table") }
        end = cursor + Int(length)
        version = try line.u16(&cursor, end)
        guard (2...5).contains(version) else {
            throw FormatError(.unsupported, "line table version \(version) in .debug_line", offset: UInt64(offset))
        }
        var addressSize = unit.encoding.addressSize
        if version >= 5 {
            addressSize = Int(try line.u8(&cursor, end))
            _ = try line.u8(&cursor, end) // segment_selector_size
            guard [1, 2, 4, 8].contains(addressSize) else {
                throw line.invalid(offset, "unsupported line table address size \(addressSize)")
            }
        }
        encoding = DWARFReader.Encoding(addressSize: addressSize, offsetSize: offsetSize, version: version)
        let headerLength = try line.offsetValue(&cursor, end, is64: offsetSize == 8)
        guard headerLength <= UInt64(end - cursor) else { throw line.truncated(cursor, "line table header") }
        programOffset = cursor + Int(headerLength)
        let headerEnd = programOffset
        minimumInstructionLength = UInt64(try line.u8(&cursor, headerEnd))
        maximumOperationsPerInstruction = version >= 4 ? UInt64(max(1, try line.u8(&cursor, headerEnd))) : 1
        _ = try line.u8(&cursor, headerEnd) // default_is_stmt
        lineBase = Int64(Int8(bitPattern: try line.u8(&cursor, headerEnd)))
        lineRange = UInt64(try line.u8(&cursor, headerEnd))
        opcodeBase = try line.u8(&cursor, headerEnd)
        standardOpcodeLengths = cursor
        let lengthsCount = max(0, Int(opcodeBase) - 1)
        try line.need(cursor, lengthsCount, headerEnd)
        cursor += lengthsCount
        if version >= 5 {
            try readEntryTables(input, &cursor, headerEnd, unit: unit)
        } else {
            try readLegacyTables(line, &cursor, headerEnd)
        }
    }

    /// DWARF 2–4 §6.2.4: NUL-terminated directory strings, then (name, directory, mtime, length)
    /// file entries, each list ended by an empty string.
    private mutating func readLegacyTables(_ line: DWARFReader.Bytes, _ cursor: inout Int,
                                           _ limit: Int) throws(FormatError) {
        let inLine = DWARFReader.Input.StringSection.line.rawValue << 56
        while true {
            let start = cursor
            try line.skipString(&cursor, limit)
            if cursor - start == 1 { break }
            directories.append(inLine | UInt64(start))
        }
        while true {
            let start = cursor
            try line.skipString(&cursor, limit)
            if cursor - start == 1 { break }
            let directoryIndex = try line.uleb(&cursor, limit)
            _ = try line.uleb(&cursor, limit) // modification time
            _ = try line.uleb(&cursor, limit) // length
            files.append(File(name: inLine | UInt64(start), directory: legacyDirectory(directoryIndex)))
        }
    }

    /// The directory of a DWARF 2–4 entry: index 0 is the compilation directory.
    private func legacyDirectory(_ index: UInt64) -> UInt64 {
        index >= 1 && index <= UInt64(directories.count) ? directories[Int(index - 1)] : 0
    }

    /// DWARF 5 §6.2.4.1: self-describing directory and file entry formats.
    private mutating func readEntryTables(_ input: DWARFReader.Input, _ cursor: inout Int, _ limit: Int,
                                          unit: DWARFReader.Unit) throws(FormatError) {
        let line = input.line
        for table in 0..<2 {
            let formatCount = Int(try line.u8(&cursor, limit))
            var formats: [(content: UInt64, form: UInt16)] = []
            formats.reserveCapacity(formatCount)
            for _ in 0..<formatCount {
                let content = try line.uleb(&cursor, limit)
                let formCode = try line.uleb(&cursor, limit)
                formats.append((content, formCode < UInt64(DWARFReader.Form.unknown) ? UInt16(formCode) : DWARFReader.Form.unknown))
            }
            let countOffset = cursor
            let count = try line.uleb(&cursor, limit)
            // Every entry takes at least one byte unless it has no fields at all.
            guard count <= UInt64(limit - cursor) else {
                throw line.invalid(countOffset, "line table entry count \(count) exceeds the header")
            }
            if table == 0 { directories.reserveCapacity(Int(count)) } else { files.reserveCapacity(Int(count)) }
            for _ in 0..<count {
                var path: UInt64 = 0
                var directoryIndex: UInt64 = 0
                for format in formats {
                    var form = format.form
                    let valueOffset = cursor
                    let value = try line.value(form: &form, implicitConst: 0, &cursor, limit, encoding)
                    switch format.content {
                    case 1: // DW_LNCT_path
                        if form == DWARFReader.Form.string {
                            path = DWARFReader.Input.StringSection.line.rawValue << 56 | UInt64(valueOffset)
                        } else {
                            path = try input.stringReference(form: form, value: value, unit: unit)
                        }
                    case 2: // DW_LNCT_directory_index
                        if DWARFReader.FormClass.isConstant(form) { directoryIndex = value }
                    default: // timestamp, size, MD5, vendor content
                        break
                    }
                }
                if table == 0 {
                    directories.append(path)
                } else {
                    let directory = directoryIndex < UInt64(directories.count) ? directories[Int(directoryIndex)] : 0
                    files.append(File(name: path, directory: directory,
                                      directoryIsCompilationDirectory: directoryIndex == 0))
                }
            }
        }
    }

    /// Runs the program (DWARF 5 §6.2.5), appending rows to `rows` and the index range of each
    /// complete sequence to `sequences`; rows after the last end_sequence are dropped. A row's
    /// `file` holds the raw file register (saturated to `UInt32.max`), for the caller to map.
    /// `DW_LNE_define_file` entries are appended to `files`.
    mutating func run(_ line: DWARFReader.Bytes, into rows: inout [LineRow],
                      sequences: inout [Range<Int>]) throws(FormatError) {
        var cursor = programOffset
        let limit = end
        var address: UInt64 = 0
        var operationIndex: UInt64 = 0
        var file: UInt64 = 1
        var lineNumber: UInt64 = 1
        var column: UInt64 = 0
        var sequenceStart = rows.count
        let minimumLength = minimumInstructionLength
        let maximumOperations = maximumOperationsPerInstruction
        let opcodeBase = self.opcodeBase

        @inline(__always)
        func advance(_ operationAdvance: UInt64) {
            if maximumOperations == 1 {
                address = address &+ minimumLength &* operationAdvance
            } else {
                // VLIW: the address moves by whole instructions, op_index within one.
                let total = operationIndex &+ operationAdvance
                address = address &+ minimumLength &* (total / maximumOperations)
                operationIndex = total % maximumOperations
            }
        }
        @inline(__always)
        func emit(_ isEnd: Bool) {
            rows.append(LineRow(address: address, file: UInt32(clamping: file),
                                line: UInt32(truncatingIfNeeded: lineNumber),
                                column: UInt32(truncatingIfNeeded: column), isEndSequence: isEnd))
        }

        while cursor < limit {
            let opcodeOffset = cursor
            let opcode = try line.u8(&cursor, limit)
            if opcode >= opcodeBase {
                // Special opcode: advance address and line together, then append a row.
                guard lineRange != 0 else { throw line.invalid(opcodeOffset, "special opcode with line_range 0") }
                let adjusted = UInt64(opcode - opcodeBase)
                advance(adjusted / lineRange)
                lineNumber = lineNumber &+ UInt64(bitPattern: lineBase &+ Int64(adjusted % lineRange))
                emit(false)
                continue
            }
            switch opcode {
            case 0:
                let length = try line.uleb(&cursor, limit)
                guard length <= UInt64(limit - cursor) else { throw line.truncated(opcodeOffset, "extended opcode") }
                if length == 0 { continue }
                let next = cursor + Int(length)
                let extended = try line.u8(&cursor, next)
                switch extended {
                case 1: // DW_LNE_end_sequence
                    emit(true)
                    sequences.append(sequenceStart..<rows.count)
                    sequenceStart = rows.count
                    address = 0
                    operationIndex = 0
                    file = 1
                    lineNumber = 1
                    column = 0
                case 2: // DW_LNE_set_address: the operand is as long as the opcode says
                    let size = next - cursor
                    guard [1, 2, 4, 8].contains(size) else {
                        throw line.invalid(opcodeOffset, "DW_LNE_set_address with a \(size)-byte operand")
                    }
                    address = try line.address(&cursor, next, size: size)
                    operationIndex = 0
                case 3: // DW_LNE_define_file (DWARF 2–4)
                    let name = cursor
                    try line.skipString(&cursor, next)
                    let directoryIndex = try line.uleb(&cursor, next)
                    files.append(File(name: DWARFReader.Input.StringSection.line.rawValue << 56 | UInt64(name),
                                      directory: version >= 5 ? 0 : legacyDirectory(directoryIndex)))
                default: // DW_LNE_set_discriminator and vendor opcodes carry nothing a row needs
                    break
                }
                cursor = next
            case 1: // DW_LNS_copy
                emit(false)
            case 2: // DW_LNS_advance_pc
                advance(try line.uleb(&cursor, limit))
            case 3: // DW_LNS_advance_line
                lineNumber = lineNumber &+ UInt64(bitPattern: try line.sleb(&cursor, limit))
            case 4: // DW_LNS_set_file
                file = try line.uleb(&cursor, limit)
            case 5: // DW_LNS_set_column
                column = try line.uleb(&cursor, limit)
            case 6, 7, 10, 11: // negate_stmt, set_basic_block, set_prologue_end, set_epilogue_begin
                break
            case 8: // DW_LNS_const_add_pc: the address advance of special opcode 255
                guard lineRange != 0 else { throw line.invalid(opcodeOffset, "DW_LNS_const_add_pc with line_range 0") }
                advance(UInt64(255 - opcodeBase) / lineRange)
            case 9: // DW_LNS_fixed_advance_pc
                address = address &+ UInt64(try line.u16(&cursor, limit))
                operationIndex = 0
            case 12: // DW_LNS_set_isa
                _ = try line.uleb(&cursor, limit)
            default:
                // An opcode this reader does not know: skip its operands as the header declares.
                var lengthOffset = standardOpcodeLengths + Int(opcode) - 1
                let operands = try line.u8(&lengthOffset, programOffset)
                for _ in 0..<operands { _ = try line.uleb(&cursor, limit) }
            }
        }
        rows.removeSubrange(sequenceStart...)
    }
}
