import CDwarf
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymBytes
import SymTable

/// Extracts functions, inlined subroutines and line tables with libdwarf.
///
/// libdwarf is fed the sections SymELF already mapped and decompressed through its object-access
/// interface (libdwarf 20210528 cannot read zstd sections itself). A libdwarf handle is not
/// thread-safe, and libdwarf 20210528 also keeps process-wide state (its allocation-tracking tree):
/// two handles used at once on two threads corrupt the heap. Every use is serialised by `lock`.
public enum LibdwarfExtractor {
    private static let lock = Mutex<Void>(())

    /// Extracts every compile unit of `sections` into `builder`.
    public static func extract(_ sections: DWARFSections, into builder: inout ModelBuilder) throws(FormatError) {
        guard sections.hasDebugInfo else { return }
        let object = LibdwarfObject(sections)
        try lock.withLock { (_) throws(FormatError) in try extract(object, into: &builder) }
    }

    private static func extract(_ object: LibdwarfObject, into builder: inout ModelBuilder) throws(FormatError) {
        try object.withDebug { (dbg) throws(FormatError) in
            var walker = LibdwarfWalker(dbg: dbg)
            try walker.run(into: &builder)
        }
    }
}

/// The section table handed to libdwarf's object-access interface.
private final class LibdwarfObject {
    struct Entry {
        var name: UnsafeMutablePointer<CChar>?
        var bytes: UnsafeRawBufferPointer
    }

    var entries: [Entry]
    let isLittleEndian: Bool
    let pointerSize: UInt8

    init(_ sections: DWARFSections) {
        // libdwarf expects index 0 to be the ELF null section.
        entries = [Entry(name: strdup(""), bytes: UnsafeRawBufferPointer(start: nil, count: 0))]
        for name in DWARFSections.wantedNames {
            let bytes = sections[name]
            if bytes.isEmpty { continue }
            entries.append(Entry(name: strdup(name), bytes: bytes))
        }
        isLittleEndian = sections.isLittleEndian
        pointerSize = sections.is64Bit ? 8 : 4
    }

    deinit {
        for entry in entries { free(entry.name) }
    }

    func withDebug(_ body: (Dwarf_Debug) throws(FormatError) -> Void) throws(FormatError) {
        var methods = Dwarf_Obj_Access_Methods(
            get_section_info: { object, index, section, error in
                let this = Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue()
                guard Int(index) < this.entries.count, let section else { return DW_DLV_NO_ENTRY }
                let entry = this.entries[Int(index)]
                section.pointee = Dwarf_Obj_Access_Section(
                    addr: 0, type: index == 0 ? 0 : 1, size: Dwarf_Unsigned(entry.bytes.count),
                    name: UnsafePointer(entry.name), link: 0, info: 0, entrysize: 0)
                return DW_DLV_OK
            },
            get_byte_order: { object in
                let this = Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue()
                return this.isLittleEndian ? DW_OBJECT_LSB : DW_OBJECT_MSB
            },
            get_length_size: { object in
                Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue().pointerSize
            },
            get_pointer_size: { object in
                Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue().pointerSize
            },
            get_section_count: { object in
                Dwarf_Unsigned(Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue().entries.count)
            },
            load_section: { object, index, data, error in
                let this = Unmanaged<LibdwarfObject>.fromOpaque(object!).takeUnretainedValue()
                guard Int(index) < this.entries.count, let data,
                      let base = this.entries[Int(index)].bytes.baseAddress else { return DW_DLV_NO_ENTRY }
                // libdwarf only reads the data (there are no relocations to apply in linked files).
                data.pointee = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Dwarf_Small.self))
                return DW_DLV_OK
            },
            relocate_a_section: nil
        )
        try withUnsafeMutablePointer(to: &methods) { (methodsPointer) throws(FormatError) in
            var interface = Dwarf_Obj_Access_Interface(
                object: Unmanaged.passUnretained(self).toOpaque(), methods: methodsPointer)
            try withUnsafeMutablePointer(to: &interface) { (interfacePointer) throws(FormatError) in
                var dbg: Dwarf_Debug?
                var error: Dwarf_Error?
                let status = dwarf_object_init_b(interfacePointer, nil, nil, UInt32(DW_GROUPNUMBER_ANY), &dbg, &error)
                guard status == DW_DLV_OK, let dbg else {
                    let message = LibdwarfWalker.message(of: error)
                    throw FormatError(.invalidValue, "libdwarf cannot open the DWARF sections: \(message)")
                }
                defer {
                    var finishError: Dwarf_Error?
                    _ = dwarf_object_finish(dbg, &finishError)
                }
                try body(dbg)
            }
        }
    }
}

/// Walks units and DIEs of one libdwarf handle.
private struct LibdwarfWalker {
    let dbg: Dwarf_Debug
    /// Linkage and short names by DIE offset (abstract origins are referenced many times).
    var names: [Dwarf_Off: (linkage: String?, name: String?)] = [:]
    /// Model name index by DIE offset.
    var nameIndex: [Dwarf_Off: UInt32] = [:]

    // Per-unit state.
    var unitVersion: Dwarf_Half = 0
    var unitBase: Dwarf_Addr = 0
    var unitFiles: [UInt32] = []
    var fileBase = 1

    init(dbg: Dwarf_Debug) {
        self.dbg = dbg
    }

    static func message(of error: Dwarf_Error?) -> String {
        guard let error, let text = dwarf_errmsg(error) else { return "unknown error" }
        return String(cString: text)
    }

    func fail(_ error: Dwarf_Error?, _ what: String) -> FormatError {
        let text = Self.message(of: error)
        if let error { dwarf_dealloc_error(dbg, error) }
        return FormatError(.invalidValue, "\(what): \(text)")
    }

    mutating func run(into builder: inout ModelBuilder) throws(FormatError) {
        while true {
            var headerLength: Dwarf_Unsigned = 0
            var version: Dwarf_Half = 0
            var abbrevOffset: Dwarf_Off = 0
            var addressSize: Dwarf_Half = 0
            var lengthSize: Dwarf_Half = 0
            var extensionSize: Dwarf_Half = 0
            var signature = Dwarf_Sig8()
            var typeOffset: Dwarf_Unsigned = 0
            var nextHeader: Dwarf_Unsigned = 0
            var unitType: Dwarf_Half = 0
            var error: Dwarf_Error?
            let status = dwarf_next_cu_header_d(dbg, 1, &headerLength, &version, &abbrevOffset, &addressSize,
                                                &lengthSize, &extensionSize, &signature, &typeOffset,
                                                &nextHeader, &unitType, &error)
            if status == DW_DLV_NO_ENTRY { break }
            guard status == DW_DLV_OK else { throw fail(error, "reading a unit header") }
            var unitDIE: Dwarf_Die?
            guard dwarf_siblingof_b(dbg, nil, 1, &unitDIE, &error) == DW_DLV_OK, let unitDIE else {
                throw fail(error, "reading a unit DIE")
            }
            defer { dwarf_dealloc_die(unitDIE) }
            let skip = unitType == Dwarf_Half(DW_UT_type) || unitType == Dwarf_Half(DW_UT_skeleton)
                || unitType == Dwarf_Half(DW_UT_split_type)
                || has(unitDIE, DW_AT_dwo_name) || has(unitDIE, DW_AT_GNU_dwo_name) || has(unitDIE, DW_AT_GNU_dwo_id)
            if skip { continue }
            unitVersion = version
            var low: Dwarf_Addr = 0
            unitBase = dwarf_lowpc(unitDIE, &low, &error) == DW_DLV_OK ? low : 0
            if error != nil { dwarf_dealloc_error(dbg, error); error = nil }
            try readLines(unitDIE, into: &builder)
            try visitChildren(of: unitDIE, scope: nil, depth: 0, into: &builder)
        }
    }

    // MARK: Attributes

    func has(_ die: Dwarf_Die, _ attribute: Int32) -> Bool {
        var present: Dwarf_Bool = 0
        var error: Dwarf_Error?
        if dwarf_hasattr(die, Dwarf_Half(attribute), &present, &error) != DW_DLV_OK {
            if let error { dwarf_dealloc_error(dbg, error) }
            return false
        }
        return present != 0
    }

    func withAttribute<T>(_ die: Dwarf_Die, _ attribute: Int32, _ body: (Dwarf_Attribute) -> T?) -> T? {
        var attr: Dwarf_Attribute?
        var error: Dwarf_Error?
        let status = dwarf_attr(die, Dwarf_Half(attribute), &attr, &error)
        if let error { dwarf_dealloc_error(dbg, error) }
        guard status == DW_DLV_OK, let attr else { return nil }
        defer { dwarf_dealloc_attribute(attr) }
        return body(attr)
    }

    func string(_ die: Dwarf_Die, _ attribute: Int32) -> String? {
        withAttribute(die, attribute) { attr in
            var text: UnsafeMutablePointer<CChar>?
            var error: Dwarf_Error?
            let status = dwarf_formstring(attr, &text, &error)
            if let error { dwarf_dealloc_error(dbg, error) }
            guard status == DW_DLV_OK, let text else { return nil }
            return String(cString: text)
        }
    }

    /// An unsigned constant; DW_FORM_implicit_const needs `dwarf_formsdata` (gcc 12 call_file/line).
    func unsigned(_ die: Dwarf_Die, _ attribute: Int32) -> UInt64? {
        withAttribute(die, attribute) { attr in
            var value: Dwarf_Unsigned = 0
            var error: Dwarf_Error?
            if dwarf_formudata(attr, &value, &error) == DW_DLV_OK { return value }
            if let error { dwarf_dealloc_error(dbg, error) }
            var signed: Dwarf_Signed = 0
            var error2: Dwarf_Error?
            if dwarf_formsdata(attr, &signed, &error2) == DW_DLV_OK { return UInt64(bitPattern: signed) }
            if let error2 { dwarf_dealloc_error(dbg, error2) }
            return nil
        }
    }

    func reference(_ die: Dwarf_Die, _ attribute: Int32) -> Dwarf_Off? {
        withAttribute(die, attribute) { attr in
            var offset: Dwarf_Off = 0
            var error: Dwarf_Error?
            let status = dwarf_global_formref(attr, &offset, &error)
            if let error { dwarf_dealloc_error(dbg, error) }
            return status == DW_DLV_OK ? offset : nil
        }
    }

    // MARK: Names

    /// (linkage name, short name) of a DIE, following specification and abstract-origin links.
    mutating func names(of die: Dwarf_Die, offset: Dwarf_Off, depth: Int) -> (linkage: String?, name: String?) {
        if let cached = names[offset] { return cached }
        var linkage = string(die, DW_AT_linkage_name) ?? string(die, DW_AT_MIPS_linkage_name)
        var name = string(die, DW_AT_name)
        if (linkage == nil || name == nil) && depth < 8 {
            for link in [DW_AT_specification, DW_AT_abstract_origin] {
                guard let target = reference(die, link) else { continue }
                var targetDIE: Dwarf_Die?
                var error: Dwarf_Error?
                guard dwarf_offdie_b(dbg, target, 1, &targetDIE, &error) == DW_DLV_OK, let targetDIE else {
                    if let error { dwarf_dealloc_error(dbg, error) }
                    continue
                }
                let inherited = names(of: targetDIE, offset: target, depth: depth + 1)
                dwarf_dealloc_die(targetDIE)
                linkage = linkage ?? inherited.linkage
                name = name ?? inherited.name
                if linkage != nil && name != nil { break }
            }
        }
        names[offset] = (linkage, name)
        return (linkage, name)
    }

    mutating func nameIndex(of die: Dwarf_Die, into builder: inout ModelBuilder) -> UInt32 {
        var offset: Dwarf_Off = 0
        var error: Dwarf_Error?
        if dwarf_dieoffset(die, &offset, &error) != DW_DLV_OK {
            if let error { dwarf_dealloc_error(dbg, error) }
            return 0
        }
        if let index = nameIndex[offset] { return index }
        let resolved = names(of: die, offset: offset, depth: 0)
        let index = builder.intern(resolved.linkage ?? resolved.name ?? "")
        nameIndex[offset] = index
        return index
    }

    // MARK: Ranges

    func ranges(of die: Dwarf_Die) throws(FormatError) -> [AddressRange] {
        var error: Dwarf_Error?
        var low: Dwarf_Addr = 0
        if dwarf_lowpc(die, &low, &error) == DW_DLV_OK {
            var high: Dwarf_Addr = 0
            var form: Dwarf_Half = 0
            var formClass = DW_FORM_CLASS_UNKNOWN
            if dwarf_highpc_b(die, &high, &form, &formClass, &error) == DW_DLV_OK {
                let end = formClass == DW_FORM_CLASS_CONSTANT ? low &+ high : high
                return end > low ? [AddressRange(start: low, end: end)] : []
            }
            if let error { dwarf_dealloc_error(dbg, error) }
            return []
        }
        if let error { dwarf_dealloc_error(dbg, error) }
        return withAttribute(die, DW_AT_ranges) { attr in
            unitVersion >= 5 ? rangeList(attr) : legacyRanges(attr, die: die)
        } ?? []
    }

    /// DWARF 2-4 `.debug_ranges`: pairs relative to the unit base, with base-address entries.
    func legacyRanges(_ attr: Dwarf_Attribute, die: Dwarf_Die) -> [AddressRange] {
        var offset: Dwarf_Off = 0
        var error: Dwarf_Error?
        if dwarf_global_formref(attr, &offset, &error) != DW_DLV_OK {
            if let error { dwarf_dealloc_error(dbg, error); }
            var value: Dwarf_Unsigned = 0
            var error2: Dwarf_Error?
            guard dwarf_formudata(attr, &value, &error2) == DW_DLV_OK else {
                if let error2 { dwarf_dealloc_error(dbg, error2) }
                return []
            }
            offset = value
        }
        var realOffset: Dwarf_Off = 0
        var list: UnsafeMutablePointer<Dwarf_Ranges>?
        var count: Dwarf_Signed = 0
        var byteCount: Dwarf_Unsigned = 0
        var error3: Dwarf_Error?
        guard dwarf_get_ranges_b(dbg, offset, die, &realOffset, &list, &count, &byteCount, &error3) == DW_DLV_OK,
              let list else {
            if let error3 { dwarf_dealloc_error(dbg, error3) }
            return []
        }
        defer { dwarf_ranges_dealloc(dbg, list, count) }
        var result: [AddressRange] = []
        var base = unitBase
        for index in 0..<Int(max(0, count)) {
            let entry = list[index]
            switch entry.dwr_type {
            case DW_RANGES_ENTRY:
                let start = base &+ entry.dwr_addr1
                let end = base &+ entry.dwr_addr2
                if end > start { result.append(AddressRange(start: start, end: end)) }
            case DW_RANGES_ADDRESS_SELECTION:
                base = entry.dwr_addr2
            default:
                break
            }
        }
        return result
    }

    /// DWARF 5 `.debug_rnglists`; libdwarf "cooks" every entry kind into absolute addresses.
    func rangeList(_ attr: Dwarf_Attribute) -> [AddressRange] {
        var form: Dwarf_Half = 0
        var error: Dwarf_Error?
        guard dwarf_whatform(attr, &form, &error) == DW_DLV_OK else {
            if let error { dwarf_dealloc_error(dbg, error) }
            return []
        }
        var value: Dwarf_Unsigned = 0
        let status = form == Dwarf_Half(DW_FORM_rnglistx)
            ? dwarf_formudata(attr, &value, &error) : dwarf_global_formref(attr, &value, &error)
        guard status == DW_DLV_OK else {
            if let error { dwarf_dealloc_error(dbg, error) }
            return []
        }
        var head: Dwarf_Rnglists_Head?
        var count: Dwarf_Unsigned = 0
        var globalOffset: Dwarf_Unsigned = 0
        guard dwarf_rnglists_get_rle_head(attr, form, value, &head, &count, &globalOffset, &error) == DW_DLV_OK,
              let head else {
            if let error { dwarf_dealloc_error(dbg, error) }
            return []
        }
        defer { _ = dwarf_dealloc_rnglists_head(head) }
        var result: [AddressRange] = []
        for index in 0..<count {
            var length: UInt32 = 0
            var code: UInt32 = 0
            var raw1: Dwarf_Unsigned = 0, raw2: Dwarf_Unsigned = 0
            var unavailable: Dwarf_Bool = 0
            var start: Dwarf_Unsigned = 0, end: Dwarf_Unsigned = 0
            guard dwarf_get_rnglists_entry_fields_a(head, index, &length, &code, &raw1, &raw2, &unavailable,
                                                    &start, &end, &error) == DW_DLV_OK else {
                if let error { dwarf_dealloc_error(dbg, error) }
                break
            }
            switch Int32(code) {
            case DW_RLE_end_of_list: return result
            case DW_RLE_base_address, DW_RLE_base_addressx: continue
            default:
                if unavailable == 0 && end > start { result.append(AddressRange(start: start, end: end)) }
            }
        }
        return result
    }

    // MARK: Lines

    mutating func readLines(_ unitDIE: Dwarf_Die, into builder: inout ModelBuilder) throws(FormatError) {
        unitFiles = []
        var error: Dwarf_Error?
        var version: Dwarf_Unsigned = 0
        var tableCount: Dwarf_Small = 0
        var context: Dwarf_Line_Context?
        let status = dwarf_srclines_b(unitDIE, &version, &tableCount, &context, &error)
        if status == DW_DLV_NO_ENTRY { return }
        guard status == DW_DLV_OK, let context else { throw fail(error, "reading a line table") }
        defer { dwarf_srclines_dealloc_b(context) }
        // Build paths from the raw file table (llvm-symbolizer's rule, see ModelBuilder) rather than
        // with dwarf_srcfiles, whose DWARF 5 list does not line up with the file numbers.
        var base: Dwarf_Signed = 0, count: Dwarf_Signed = 0, endIndex: Dwarf_Signed = 0
        guard dwarf_srclines_files_indexes(context, &base, &count, &endIndex, &error) == DW_DLV_OK else {
            throw fail(error, "reading a line table's file list")
        }
        fileBase = Int(base)
        var compilationDirectory = ""
        var compDir: UnsafePointer<CChar>?
        if dwarf_srclines_comp_dir(context, &compDir, &error) == DW_DLV_OK, let compDir {
            compilationDirectory = String(cString: compDir)
        }
        if let failure = error { dwarf_dealloc_error(dbg, failure); error = nil }
        var index = base
        while index < endIndex {
            defer { index += 1 }
            var name: UnsafePointer<CChar>?
            var directoryIndex: Dwarf_Unsigned = 0, modified: Dwarf_Unsigned = 0, length: Dwarf_Unsigned = 0
            var md5: UnsafeMutablePointer<Dwarf_Form_Data16>?
            guard dwarf_srclines_files_data_b(context, index, &name, &directoryIndex, &modified, &length, &md5,
                                              &error) == DW_DLV_OK, let name else {
                if let failure = error { dwarf_dealloc_error(dbg, failure); error = nil }
                unitFiles.append(0)
                continue
            }
            // DWARF 5 numbers include directories from 0 (0 is the compilation directory's entry);
            // earlier versions use 0 for the compilation directory itself. libdwarf follows both.
            var directory = ""
            let libdwarfIndex = Dwarf_Signed(directoryIndex)
            if libdwarfIndex > 0 || version >= 5 {
                var text: UnsafePointer<CChar>?
                if dwarf_srclines_include_dir_data(context, libdwarfIndex, &text, &error) == DW_DLV_OK, let text {
                    directory = String(cString: text)
                } else if let failure = error {
                    dwarf_dealloc_error(dbg, failure)
                    error = nil
                }
            }
            let path = ModelBuilder.joinPath(compilationDirectory: compilationDirectory, directory: directory,
                                             name: String(cString: name),
                                             directoryIsCompilationDirectory: version >= 5 && directoryIndex == 0)
            unitFiles.append(builder.file(path: path))
        }
        var lines: UnsafeMutablePointer<Dwarf_Line?>?
        var lineCount: Dwarf_Signed = 0
        guard dwarf_srclines_from_linecontext(context, &lines, &lineCount, &error) == DW_DLV_OK, let lines else {
            if let error { dwarf_dealloc_error(dbg, error) }
            return
        }
        var sequence: [LineRow] = []
        for index in 0..<Int(max(0, lineCount)) {
            guard let line = lines[index] else { continue }
            var address: Dwarf_Addr = 0
            var number: Dwarf_Unsigned = 0
            var fileNumber: Dwarf_Unsigned = 0
            var column: Dwarf_Unsigned = 0
            var endSequence: Dwarf_Bool = 0
            _ = dwarf_lineaddr(line, &address, &error)
            _ = dwarf_lineno(line, &number, &error)
            _ = dwarf_line_srcfileno(line, &fileNumber, &error)
            _ = dwarf_lineoff_b(line, &column, &error)
            _ = dwarf_lineendsequence(line, &endSequence, &error)
            if let error { dwarf_dealloc_error(dbg, error) }
            error = nil
            sequence.append(LineRow(address: address, file: modelFile(fileNumber), line: UInt32(truncatingIfNeeded: number),
                                    column: UInt32(truncatingIfNeeded: column), isEndSequence: endSequence != 0))
            if endSequence != 0 {
                builder.addSequence(sequence)
                sequence.removeAll(keepingCapacity: true)
            }
        }
    }

    func modelFile(_ number: UInt64) -> UInt32 {
        guard number >= UInt64(fileBase) else { return 0 }
        let index = number - UInt64(fileBase)
        return index < UInt64(unitFiles.count) ? unitFiles[Int(index)] : 0
    }

    // MARK: DIE tree

    /// Tags whose children may hold code scopes.
    static func descends(_ tag: Dwarf_Half) -> Bool {
        switch Int32(tag) {
        case DW_TAG_subprogram, DW_TAG_inlined_subroutine, DW_TAG_lexical_block, DW_TAG_namespace,
             DW_TAG_module, DW_TAG_class_type, DW_TAG_structure_type, DW_TAG_union_type,
             DW_TAG_try_block, DW_TAG_catch_block, DW_TAG_interface_type:
            return true
        default:
            return false
        }
    }

    mutating func visitChildren(of parent: Dwarf_Die, scope: UInt32?, depth: Int,
                                into builder: inout ModelBuilder) throws(FormatError) {
        guard depth < 256 else { throw FormatError(.limitExceeded, "DIE nesting deeper than 256") }
        var error: Dwarf_Error?
        var child: Dwarf_Die?
        let status = dwarf_child(parent, &child, &error)
        if status == DW_DLV_NO_ENTRY { return }
        guard status == DW_DLV_OK, var die = child else { throw fail(error, "reading a DIE") }
        while true {
            try visit(die, scope: scope, depth: depth, into: &builder)
            var sibling: Dwarf_Die?
            let next = dwarf_siblingof_b(dbg, die, 1, &sibling, &error)
            dwarf_dealloc_die(die)
            if next == DW_DLV_NO_ENTRY { return }
            guard next == DW_DLV_OK, let sibling else { throw fail(error, "reading a sibling DIE") }
            die = sibling
        }
    }

    mutating func visit(_ die: Dwarf_Die, scope: UInt32?, depth: Int, into builder: inout ModelBuilder) throws(FormatError) {
        var tag: Dwarf_Half = 0
        var error: Dwarf_Error?
        guard dwarf_tag(die, &tag, &error) == DW_DLV_OK else { throw fail(error, "reading a DIE tag") }
        guard Self.descends(tag) else { return }
        switch Int32(tag) {
        case DW_TAG_subprogram:
            if has(die, DW_AT_declaration) { return }
            let codeRanges = try ranges(of: die)
            var own: UInt32?
            if !codeRanges.isEmpty {
                own = builder.addScope(name: nameIndex(of: die, into: &builder), parent: Scope.noParent,
                                       ranges: codeRanges)
            }
            try visitChildren(of: die, scope: own, depth: depth + 1, into: &builder)
        case DW_TAG_inlined_subroutine:
            // An inlined call inside a function without code has nowhere to belong.
            guard let scope else { return }
            let codeRanges = try ranges(of: die)
            var own: UInt32?
            if !codeRanges.isEmpty {
                let callFile = unsigned(die, DW_AT_call_file).map(modelFile) ?? 0
                own = builder.addScope(
                    name: nameIndex(of: die, into: &builder), parent: scope, ranges: codeRanges,
                    callFile: callFile,
                    callLine: UInt32(truncatingIfNeeded: unsigned(die, DW_AT_call_line) ?? 0),
                    callColumn: UInt32(truncatingIfNeeded: unsigned(die, DW_AT_call_column) ?? 0))
            }
            try visitChildren(of: die, scope: own ?? scope, depth: depth + 1, into: &builder)
        default:
            try visitChildren(of: die, scope: scope, depth: depth + 1, into: &builder)
        }
    }
}
