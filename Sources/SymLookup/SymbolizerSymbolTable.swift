import SymBytes
import SymELF
import Symbolication

/// An ELF file's own symbols indexed the way llvm-symbolizer indexes them
/// (`SymbolizableObjectFile::addSymbol`): the names of `DATA` answers, of code the DWARF does not
/// cover, and the `STT_FILE` name that precedes each local symbol.
///
/// Kept apart from the `.csym` table because these rules (data objects, zero-sized labels that
/// cover everything after them) are llvm-symbolizer's, not crashsym's.
public struct SymbolizerSymbolTable: Sendable {
    /// One symbol as answered.
    public struct Symbol: Sendable, Equatable {
        /// The name as stored (not demangled).
        public var name: String
        /// `st_value`.
        public var address: UInt64
        /// `st_size` (0 covers every address up to the next symbol).
        public var size: UInt64
        /// The `STT_FILE` name preceding a local symbol; nil for global symbols or when none.
        public var file: String?
    }

    private struct Entry {
        var address: UInt64
        var size: UInt64
        var name: String
        /// Position in the symbol table for local symbols, 0 for global ones (as llvm).
        var localIndex: Int
    }

    private let entries: [Entry]
    /// `(table position, name)` of every `STT_FILE` symbol, in table order.
    private let files: [(index: Int, name: String)]

    /// Indexes `file`'s `.symtab` (its `.dynsym` when it has no `.symtab`).
    public init(file: ELFFile) throws(FormatError) {
        let all = try file.symbols()
        let statics = all.filter { !$0.isDynamic }
        let table = statics.isEmpty ? all : statics
        let mapping = file.header.machine == 40 || file.header.machine == 183 || file.header.machine == 243
        var entries: [Entry] = []
        var files: [(index: Int, name: String)] = []
        for (position, symbol) in table.enumerated() {
            let index = position + 1  // `symbols()` drops the reserved entry 0
            let section = Int(symbol.sectionIndex)
            guard section != 0, section < 0xff00, section < file.sections.count else {
                if symbol.type == ELF.STT_FILE { files.append((index, symbol.name)) }
                continue
            }
            guard file.sections[section].flags & ELF.SHF_ALLOC != 0 else { continue }
            switch symbol.type {
            case ELF.STT_NOTYPE, ELF.STT_FUNC, ELF.STT_OBJECT, ELF.STT_GNU_IFUNC: break
            default: continue
            }
            // ARM, AArch64 and RISC-V mapping symbols ($a, $d, $t, $x) are not names.
            if mapping, Self.isMappingSymbol(symbol.name) { continue }
            entries.append(Entry(address: symbol.value, size: symbol.size, name: symbol.name,
                                 localIndex: symbol.binding == ELF.STB_LOCAL ? index : 0))
        }
        // Sort by (address, size), keeping table order among equals; per address keep the last
        // (largest) one, as llvm does.
        let order = entries.indices.sorted { left, right in
            let a = entries[left], b = entries[right]
            if a.address != b.address { return a.address < b.address }
            if a.size != b.size { return a.size < b.size }
            return left < right
        }
        var unique: [Entry] = []
        unique.reserveCapacity(order.count)
        for position in order {
            let entry = entries[position]
            if let last = unique.last, last.address == entry.address {
                unique[unique.count - 1] = entry
            } else {
                unique.append(entry)
            }
        }
        self.entries = unique
        self.files = files
    }

    /// The symbol llvm-symbolizer names for `address`: the last one starting at or before it,
    /// unless that one has a size and ends before `address`.
    public func symbol(containing address: UInt64) -> Symbol? {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let entry = entries[low - 1]
        let (end, overflow) = entry.address.addingReportingOverflow(entry.size)
        if entry.size != 0 && !overflow && end <= address { return nil }
        var file: String?
        if entry.localIndex != 0 {
            // The last STT_FILE symbol before the local symbol in table order.
            var lowFile = 0, highFile = files.count
            while lowFile < highFile {
                let middle = (lowFile + highFile) / 2
                if files[middle].index < entry.localIndex { lowFile = middle + 1 } else { highFile = middle }
            }
            if lowFile > 0 { file = files[lowFile - 1].name }
        }
        return Symbol(name: entry.name, address: entry.address, size: entry.size, file: file)
    }

    static func isMappingSymbol(_ name: String) -> Bool {
        let bytes = Array(name.utf8.prefix(3))
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "$") else { return false }
        guard "adtx".utf8.contains(bytes[1]) else { return false }
        return bytes.count == 2 || bytes[2] == UInt8(ascii: ".")
    }
}
