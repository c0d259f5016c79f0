import SymBytes
import SymELF
import Symbolication

/// An ELF symbol table searched the way BFD's `elf_find_function` does for `addr2line`.
struct Addr2lineSymbols {
    struct Symbol {
        var name: String
        var address: UInt64
        var size: UInt64
        var section: Int
        var file: String?
    }

    /// Function-like symbols sorted by address; at one address the one BFD picks.
    private let symbols: [Symbol]
    /// `(start, end, index)` of allocated sections.
    private let sections: [(start: UInt64, end: UInt64, index: Int)]

    init(file: ELFFile) throws(FormatError) {
        let all = try file.symbols()
        let statics = all.filter { !$0.isDynamic }
        let table = statics.isEmpty ? all : statics
        var picked: [Symbol] = []
        var fileName: String?
        enum State { case nothingSeen, symbolSeen, fileAfterSymbolSeen }
        var state = State.nothingSeen
        for symbol in table {
            if symbol.type == ELF.STT_FILE {
                fileName = symbol.name
                if state == .symbolSeen { state = .fileAfterSymbolSeen }
                continue
            }
            defer { if state == .nothingSeen { state = .symbolSeen } }
            let section = Int(symbol.sectionIndex)
            guard section != 0, section < 0xff00, section < file.sections.count else { continue }
            // BFD keeps symbol values relative to their section: one placed before its section's
            // start (`__bss_start` in `.bss`) wraps around and never covers an address.
            guard symbol.value >= file.sections[section].address else { continue }
            guard symbol.type != ELF.STT_SECTION, symbol.type != ELF.STT_OBJECT, symbol.type != ELF.STT_TLS else { continue }
            // annobin's hidden local zero-sized labels are not functions.
            if symbol.size == 0 && symbol.binding == ELF.STB_LOCAL && symbol.type == ELF.STT_NOTYPE
                && symbol.other & 3 == 2 { continue }
            let local = symbol.binding == ELF.STB_LOCAL
            picked.append(Symbol(name: symbol.name, address: symbol.value, size: max(symbol.size, 1), section: section,
                                 file: fileName != nil && (local || state != .fileAfterSymbolSeen) ? fileName : nil))
        }
        // BFD keeps the first symbol at an address unless a later one is strictly larger.
        let order = picked.indices.sorted { left, right in
            picked[left].address != picked[right].address ? picked[left].address < picked[right].address : left < right
        }
        var chosen: [Symbol] = []
        for position in order {
            let symbol = picked[position]
            if let last = chosen.last, last.address == symbol.address, last.section == symbol.section {
                if symbol.size > last.size { chosen[chosen.count - 1] = symbol }
            } else {
                chosen.append(symbol)
            }
        }
        symbols = chosen
        sections = file.sections.enumerated().compactMap { index, section in
            guard section.flags & ELF.SHF_ALLOC != 0, section.size > 0 else { return nil }
            let (end, overflow) = section.address.addingReportingOverflow(section.size)
            return overflow ? nil : (section.address, end, index)
        }
    }

    /// The function BFD names for `address`: the nearest symbol at or before it in the section
    /// containing it.
    func function(containing address: UInt64) -> Symbol? {
        guard let section = sections.first(where: { $0.start <= address && address < $0.end })?.index else { return nil }
        var low = 0, high = symbols.count
        while low < high {
            let middle = (low + high) / 2
            if symbols[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        var index = low - 1
        while index >= 0 {
            if symbols[index].section == section { return symbols[index] }
            index -= 1
        }
        return nil
    }
}
