import SymBytes
import SymDemangle
import SymDWARF
import SymELF
import SymTable

/// Which DWARF decoder converts a module.
public enum DWARFDecoder: String, Sendable, CaseIterable {
    /// crashsym's own decoder (fast; checked against libdwarf in the tests).
    case builtin
    /// libdwarf's DIE walk and line tables.
    case libdwarf
}

/// Turns an ELF file (and its separate debug file, if any) into a symbol model and a `.csym` table.
public enum ModuleConverter {
    /// The version of the conversion output (this converter and the writer it calls). Bump it
    /// whenever a change makes the same ELF file convert to a different table (a fix in the DWARF
    /// reader, the symbol rules, the writer), so that tables cached (`TableCache`) by older builds
    /// of crashsym are converted again instead of answering with the old mistakes. History:
    /// 1. tables named `<build-id>.csym` (before versioning; never read now).
    /// 2. a zero-size label covers the rest of its section only (`_fini` fix).
    /// 3. no symbol-name override that repeats the physical function's name (such ranges merge);
    ///    a stripped binary's functions named by its own symbols or DWARF, not the debug file's aliases.
    /// 4. names kept as their bytes: two spellings of one name in different Unicode forms (é as
    ///    one scalar or two) stay two names instead of merging into the first spelling.
    /// 5. `.csym` v2: Swift names' demangled forms stored in the table (`SwiftNameForms`).
    /// 6. stored Swift names spelled as `swift-demangle` spells them (type sugar: `[T]`, `T?`).
    /// 7. one symbol per address, chosen by a rule (`chooseAmongAliases`): an untyped label no
    ///    longer names the function it sits on.
    /// 8. `.csym` v3: the module's layout recorded (`ModuleLayout`), so a table alone places
    ///    mapping-relative and absolute addresses of modules not linked at 0.
    /// 9. `.csym` v4: the module's unwind rules (`UnwindRules`, from `.eh_frame` and
    ///    `.debug_frame`), so a table alone walks stacks.
    /// 10. `.csym` v5: the unwind rules keep their DWARF expressions (CFA and register rules), so
    ///    a table alone walks through PLT entries and signal trampolines as the ELF file does.
    /// 11. DWARF subprogram first: among several symbols at one address, the one the DWARF
    ///    function starting there is named after; a physical frame's scope record keeps the DWARF
    ///    name beside the symbol's (the `addr2line` drop-in prints the DWARF name, as binutils).
    public static let version = 11

    /// Builds the neutral model of `binary`, reading DWARF from `debugFile` when given (else from
    /// `binary`), function symbols from `binary` and, where they and the DWARF leave code
    /// unnamed, from `debugFile`, and the unwind rules (as `table` stores them).
    public static func model(binary: ELFFile, debugFile: ELFFile? = nil, decoder: DWARFDecoder = .builtin,
                             threads: Int = 1) throws(FormatError) -> SymbolModel {
        var model = try build(binary: binary, debugFile: debugFile, decoder: decoder, threads: threads, codesLines: false).model
        model.module.unwindRules = UnwindRules.read(binary: binary, debugFile: debugFile)
        return model
    }

    /// Converts `binary` (with an optional separate debug file) into `.csym` bytes.
    public static func table(binary: ELFFile, debugFile: ELFFile? = nil, decoder: DWARFDecoder = .builtin,
                             threads: Int = 1) throws(FormatError) -> [UInt8] {
        // The rows stay coded (a few bytes each, not a `LineRow`'s 24), and the writer gets the
        // only copy of the model and rows, which it frees before encoding.
        let (built, lines) = try build(binary: binary, debugFile: debugFile, decoder: decoder, threads: threads,
                                       codesLines: true).finish()
        // The unwind rules once the DWARF walk (the conversion's peak) is over and its memory given
        // back, so the rows being reduced never add to it.
        HeapTuning.returnFreePages()
        let unwindRules = UnwindRules.read(binary: binary, debugFile: debugFile)
        HeapTuning.returnFreePages()
        return try SymbolTableWriter.write(withUnwindRules(consume built, unwindRules), lines: consume lines,
                                           storedNames: SwiftNameForms(), threads: max(1, threads))
    }

    /// `model` with `rules` in its identity (the model moves through: no copy is kept here).
    private static func withUnwindRules(_ model: consuming SymbolModel, _ rules: UnwindRules?) -> SymbolModel {
        model.module.unwindRules = rules
        return model
    }

    /// The forms the converter stores beside function names: for names that `lookup` demangles
    /// with the Swift runtime (about a microsecond each, the bulk of a Swift module's lookup
    /// time), exactly the bytes it prints (`Demangler.withDemangled(utf8:)`); nothing for other
    /// names (C++ and Rust demangle fast enough at lookup) or when demangling fails.
    struct SwiftNameForms: StoredNameProvider {
        let demangler = Demangler()

        func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
            // Only names the renderer demangles (`mayBeMangled`) and that are Swift's.
            guard FrameRenderer.mayBeMangled(name), Demangler.hasSwiftPrefix(name) else { return }
            _ = demangler.withDemangled(utf8: name, body)
        }
    }

    /// Fills a model builder with `binary`'s DWARF (or `debugFile`'s) and both files' symbols.
    static func build(binary: ELFFile, debugFile: ELFFile?, decoder: DWARFDecoder, threads: Int,
                      codesLines: Bool) throws(FormatError) -> ModelBuilder {
        let identity = ModuleIdentity(
            buildID: binary.buildID ?? debugFile?.buildID ?? [],
            machine: binary.header.machine, is64Bit: binary.header.is64Bit,
            name: baseName(binary.path), layout: ModuleLayout(binary) ?? debugFile.flatMap(ModuleLayout.init))
        var builder = ModelBuilder(module: identity, codesLines: codesLines)
        let dwarfFile = (debugFile?.hasDWARF ?? false) ? debugFile! : binary
        if dwarfFile.hasDWARF {
            // Our decoder reads a compressed `.debug_info` and `.debug_line` as streams, a unit or
            // so resident at a time (libc's debug file: 7.1 MB decompressed); libdwarf needs them whole.
            let sections = try DWARFSections(elf: dwarfFile,
                                             streaming: decoder == .builtin ? DWARFReader.streamableSections : [])
            switch decoder {
            // The last copy: the reader frees decompressed sections before the model grows.
            case .builtin: try DWARFReader.extract(consume sections, into: &builder, threads: threads)
            case .libdwarf: try LibdwarfExtractor.extract(sections, into: &builder)
            }
        }
        // Symbol order matters: among symbols of one size at one address that the DWARF does not
        // choose between (`chooseAmongAliases`) the last one names the function, as in
        // llvm-symbolizer, which reads `.symtab` (`.dynsym` only when there is no `.symtab`).
        // Like llvm-symbolizer, a stripped binary's functions are named by its own table
        // (`abort`, `raise`, `__libc_start_main`) or else by their DWARF name, never by the debug
        // file's aliases (`__GI_abort`, `__libc_start_main@GLIBC_2.2.5`,
        // `str_to_mpn.part.0.constprop.0`): the debug file's symbols only name code that neither
        // the binary's table nor the DWARF does. Duplicates are found by interned name (an
        // integer), not by String: big modules have hundreds of thousands of long names.
        var seen = Set<SymbolKey>()
        var candidates: [AliasCandidate] = []
        var binaryAddresses = Set<UInt64>()
        let dwarfFunctions = debugFile == nil ? [] : physicalRanges(of: builder.model)
        for file in [binary, debugFile].compactMap({ $0 }) {
            let isBinary = file === binary
            // `.symtab` yields symbols when it has an entry past the null one (a broken one throws
            // below); the symbols are read one at a time, not all held with their names.
            let entrySize: UInt64 = file.header.is64Bit ? 24 : 16
            let hasStatics = file.sections.contains { $0.type == ELF.SHT_SYMTAB && !$0.isNoBits && $0.size >= 2 * entrySize }
            var read = 0
            try file.forEachSymbol { symbol in
                // The tables' pages go back as the walk goes, not only at the end: a big module's
                // symbol and string tables (swift-format: 11 MB) would otherwise all be resident
                // on top of the model.
                read += 1
                if read % symbolsPerRelease == 0 { releaseSymbolTablePages(of: file) }
                guard (!hasStatics || !symbol.isDynamic) && isCodeSymbol(symbol, in: file) else { return }
                // ARM marks Thumb functions with bit 0 of the symbol value; the code starts one byte lower.
                let address = file.header.machine == 40 /* EM_ARM */ && symbol.type == 2 ? symbol.value & ~1 : symbol.value
                if debugFile != nil {
                    if isBinary {
                        binaryAddresses.insert(address)
                    } else if binaryAddresses.contains(address) || contains(dwarfFunctions, address) {
                        return
                    }
                }
                let name = builder.intern(symbol.name)
                guard seen.insert(SymbolKey(name: name, address: address)).inserted else { return }
                candidates.append(AliasCandidate(name: name, address: address,
                                                  size: extent(of: symbol, at: address, in: file),
                                                  rank: AliasCandidate.rank(type: symbol.type),
                                                  order: candidates.count))
            }
            releaseSymbolTablePages(of: file)
        }
        for chosen in chooseAmongAliases(candidates, dwarf: builder.model) {
            builder.addSymbol(name: chosen.name, address: chosen.address, size: chosen.size)
        }
        return builder
    }

    /// One symbol per address, by the rule documented in README.md ("Several names at one
    /// address"). First the DWARF: where several symbols share an address at which a physical
    /// DWARF function starts, the symbol bearing that function's name (its linkage name, else its
    /// plain name: the name the DWARF reader stores), whatever its type, binding or order. Then a
    /// function (`STT_FUNC`, `STT_GNU_IFUNC`) over an untyped label (`STT_NOTYPE`: gcc 2's
    /// `gcc2_compiled.`, assembly labels), which would otherwise cover the rest of its section and
    /// name the function it sits on; then as llvm-symbolizer chooses: the largest, and among those
    /// the one read last (`.symtab` order, the binary before its debug file).
    /// (Preferring the DWARF function's name wherever it differs from the symbol's, or global over
    /// weak symbols, was measured: it disagrees with llvm-symbolizer on 19 % of libc's addresses —
    /// `__libc_start_main_impl` for `__libc_start_main`, `_IO_fwrite` for `fwrite` — names that
    /// crash signatures have always used, so the DWARF decides only among a shared address's
    /// symbols. The llvm-symbolizer drop-in names frames from the ELF symbol table itself.)
    static func chooseAmongAliases(_ candidates: [AliasCandidate], dwarf model: SymbolModel? = nil) -> [AliasCandidate] {
        guard !candidates.isEmpty else { return [] }
        let sorted = candidates.sorted { $0.address != $1.address ? $0.address < $1.address : $0.order < $1.order }
        var shared: [UInt64] = []
        for index in sorted.indices.dropFirst() where sorted[index].address == sorted[index - 1].address
            && shared.last != sorted[index].address {
            shared.append(sorted[index].address)
        }
        let functions = model.map { dwarfFunctionNames(at: shared, in: $0) } ?? [:]
        var chosen: [AliasCandidate] = []
        chosen.reserveCapacity(sorted.count)
        var groupStart = 0
        while groupStart < sorted.count {
            var groupEnd = groupStart + 1
            while groupEnd < sorted.count && sorted[groupEnd].address == sorted[groupStart].address { groupEnd += 1 }
            let group = sorted[groupStart..<groupEnd]
            if let model, let names = functions[sorted[groupStart].address],
               let named = group.first(where: { candidate in
                   names.contains { model.strings.equal(Int($0), Int(candidate.name)) }
               }) {
                chosen.append(named)
            } else {
                func key(_ candidate: AliasCandidate) -> (UInt8, UInt64, Int) {
                    (candidate.rank, candidate.size, candidate.order)
                }
                var best = sorted[groupStart]
                for candidate in group.dropFirst() where key(candidate) > key(best) { best = candidate }
                chosen.append(best)
            }
            groupStart = groupEnd
        }
        return chosen
    }

    /// The names of the physical DWARF functions with a range starting at one of `addresses`
    /// (sorted; ICF may start several functions at one address).
    static func dwarfFunctionNames(at addresses: [UInt64], in model: SymbolModel) -> [UInt64: [UInt32]] {
        guard !addresses.isEmpty else { return [:] }
        var names: [UInt64: [UInt32]] = [:]
        for scope in model.scopes where !scope.isInlined {
            for index in scope.rangeIndices where index < model.ranges.count {
                let start = model.ranges[index].start
                var low = 0, high = addresses.count
                while low < high {
                    let middle = (low + high) / 2
                    if addresses[middle] < start { low = middle + 1 } else { high = middle }
                }
                if low < addresses.count && addresses[low] == start { names[start, default: []].append(scope.name) }
            }
        }
        return names
    }

    /// The address ranges of the model's physical (not inlined) functions, sorted and merged into
    /// disjoint ranges.
    static func physicalRanges(of model: SymbolModel) -> [AddressRange] {
        var ranges: [AddressRange] = []
        for scope in model.scopes where !scope.isInlined {
            for index in scope.rangeIndices where index < model.ranges.count && model.ranges[index].start < model.ranges[index].end {
                ranges.append(model.ranges[index])
            }
        }
        ranges.sort { $0.start < $1.start }
        var merged: [AddressRange] = []
        merged.reserveCapacity(ranges.count)
        for range in ranges {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1].end = max(last.end, range.end)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// Whether `address` lies in one of `ranges` (sorted, disjoint).
    static func contains(_ ranges: [AddressRange], _ address: UInt64) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].end <= address { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].start <= address
    }

    /// Symbols read between two releases of the symbol and string tables' pages (about 400 KB of
    /// `Elf64_Sym` entries and their names).
    static let symbolsPerRelease = 16384

    /// Gives back the resident pages of the file's symbol and string tables once they have been
    /// read (file mappings only: the bytes stay readable and are read again from the page cache if
    /// needed), so they do not weigh on the writer's peak memory: big C++ and Swift modules have
    /// tens of megabytes of symbol names.
    static func releaseSymbolTablePages(of file: ELFFile) {
        for table in file.sections where table.type == ELF.SHT_SYMTAB || table.type == ELF.SHT_DYNSYM {
            var sections = [table]
            if Int(table.link) < file.sections.count { sections.append(file.sections[Int(table.link)]) }
            for section in sections where !section.isCompressed {
                guard let contents = try? file.contents(of: section), contents.isFileMapping else { continue }
                contents.withUnsafeBytes { FileMappedPages.release($0) }
            }
        }
    }

    /// The size a symbol covers: its own, or for a zero-size label (`_fini`, assembly entry points)
    /// the rest of its section, so the last label of the code does not claim every address above it.
    /// (The table ends a zero-size symbol at the next symbol in any case.)
    static func extent(of symbol: ELFSymbol, at address: UInt64, in file: ELFFile) -> UInt64 {
        guard symbol.size == 0, Int(symbol.sectionIndex) < file.sections.count else { return symbol.size }
        let section = file.sections[Int(symbol.sectionIndex)]
        let (end, overflow) = section.address.addingReportingOverflow(section.size)
        return !overflow && end > address ? end - address : 0
    }

    /// Symbols that name code: functions, IFUNCs and untyped labels in executable sections
    /// (assembly), without compiler-local `.L` labels or ARM/AArch64 mapping symbols (`$x`, `$d`).
    static func isCodeSymbol(_ symbol: ELFSymbol, in file: ELFFile) -> Bool {
        let sectionIndex = Int(symbol.sectionIndex)
        guard sectionIndex != 0, sectionIndex < 0xff00, !symbol.name.isEmpty else { return false }
        switch symbol.type {
        case 2, 10: // STT_FUNC, STT_GNU_IFUNC
            break
        case 0: // STT_NOTYPE
            if symbol.name.hasPrefix(".L") || symbol.name.hasPrefix("$") { return false }
            guard sectionIndex < file.sections.count,
                  file.sections[sectionIndex].flags & 0x4 != 0 /* SHF_EXECINSTR */ else { return false }
        default:
            return false
        }
        return symbol.value != 0
    }

    static func baseName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// A code symbol that may name the code at its address (`ModuleConverter.chooseAmongAliases`).
struct AliasCandidate {
    /// Interned name.
    var name: UInt32
    var address: UInt64
    var size: UInt64
    /// Higher wins: a function over a label.
    var rank: UInt8
    /// Read order across the binary and its debug file.
    var order: Int

    static func rank(type: UInt8) -> UInt8 {
        type == ELF.STT_FUNC || type == ELF.STT_GNU_IFUNC ? 1 : 0
    }
}

private struct SymbolKey: Hashable {
    /// Interned name.
    var name: UInt32
    var address: UInt64
}
