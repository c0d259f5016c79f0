import SymELF
import Testing

extension LibELFView.Section {
    /// SymELF's section in the oracle's shape.
    init(_ section: ELFSection) {
        self.init(name: section.name, type: section.type, flags: section.flags, address: section.address,
                  offset: section.offset, size: section.size, link: section.link, info: section.info,
                  alignment: section.alignment, entrySize: section.entrySize)
    }
}

extension LibELFView.Symbol {
    /// SymELF's symbol in the oracle's shape.
    init(_ symbol: ELFSymbol) {
        self.init(name: symbol.name, value: symbol.value, size: symbol.size, type: symbol.type,
                  binding: symbol.binding, sectionIndex: symbol.sectionIndex, isDynamic: symbol.isDynamic)
    }
}

extension LibELFView.Segment {
    /// SymELF's program header in the oracle's shape.
    init(_ segment: ProgramHeader) {
        self.init(type: segment.type, flags: segment.flags, offset: segment.offset,
                  virtualAddress: segment.virtualAddress, fileSize: segment.fileSize,
                  memorySize: segment.memorySize, alignment: segment.alignment)
    }
}

/// Expects equal arrays, reporting the count and the first differing element rather than
/// dumping thousands of entries.
func expectSameElements<T: Equatable>(_ ours: [T], _ theirs: [T], _ what: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(ours.count == theirs.count, "\(what): count", sourceLocation: sourceLocation)
    if let index = (0..<min(ours.count, theirs.count)).first(where: { ours[$0] != theirs[$0] }) {
        Issue.record("\(what)[\(index)]: SymELF \(ours[index]) vs libelf \(theirs[index])",
                     sourceLocation: sourceLocation)
    }
}

/// Checks every header, section, segment and symbol of `file` against libelf reading `bytes`.
func expectAgreement(_ file: ELFFile, withLibELFReading bytes: [UInt8],
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
    let oracle = try LibELFView(bytes: bytes)
    #expect(file.header.type == oracle.type, sourceLocation: sourceLocation)
    #expect(file.header.machine == oracle.machine, sourceLocation: sourceLocation)
    #expect(file.header.entry == oracle.entry, sourceLocation: sourceLocation)
    #expect(file.header.is64Bit == oracle.is64Bit, sourceLocation: sourceLocation)
    expectSameElements(file.sections.map(LibELFView.Section.init), oracle.sections, "sections",
                       sourceLocation: sourceLocation)
    expectSameElements(file.programHeaders.map(LibELFView.Segment.init), oracle.segments, "segments",
                       sourceLocation: sourceLocation)
    expectSameElements(try file.symbols().map(LibELFView.Symbol.init), oracle.symbols, "symbols",
                       sourceLocation: sourceLocation)
}
