import SymTable

/// The small deterministic model behind the v1 compatibility fixture (Fixtures/csym/v1-sample.csym).
///
/// `main` at 0x1000..<0x1040 inlines `helper` (0x1010..<0x1020, called from main.c:10:5), which
/// inlines `inner` (0x1014..<0x1018, called from helper.h:3:7). `_start` (0x1040..<0x1050) has
/// only a symbol, with a line row for its first 8 bytes. Two symbols of one size sit at 0x1000
/// ("main" wins over "__alias" by coming later in the symbol table) and the DWARF name of main differs from its symbol, so the
/// symbol-table override is visible.
enum SampleModel {
    static func model() -> SymbolModel {
        var model = SymbolModel(module: ModuleIdentity(
            buildID: Array(0..<20), machine: 62, is64Bit: true, name: "libsample.so"))
        let sampleMain = model.appendString("sample_main")
        let helper = model.appendString("_Z6helperi")
        let inner = model.appendString("_Z5innerv")
        let source = model.appendString("/src")
        let mainC = model.appendString("main.c")
        let helperH = model.appendString("helper.h")
        let startS = model.appendString("start.S")
        let main = model.appendString("main")
        let alias = model.appendString("__alias")
        let start = model.appendString("_start")
        model.files += [SourceFile(directory: source, name: mainC), SourceFile(directory: source, name: helperH),
                        SourceFile(directory: source, name: startS)]
        model.ranges = [AddressRange(start: 0x1000, end: 0x1040), AddressRange(start: 0x1010, end: 0x1020),
                        AddressRange(start: 0x1014, end: 0x1018)]
        model.scopes = [
            Scope(name: sampleMain, firstRange: 0, rangeCount: 1),
            Scope(name: helper, parent: 0, firstRange: 1, rangeCount: 1, callFile: 1, callLine: 10, callColumn: 5),
            Scope(name: inner, parent: 1, firstRange: 2, rangeCount: 1, callFile: 2, callLine: 3, callColumn: 7),
        ]
        model.lines = [
            LineRow(address: 0x1000, file: 1, line: 5, column: 1),
            LineRow(address: 0x1010, file: 2, line: 2, column: 3),
            LineRow(address: 0x1014, file: 2, line: 3, column: 9),
            LineRow(address: 0x1018, file: 2, line: 4, column: 1),
            LineRow(address: 0x1020, file: 1, line: 11, column: 1),
            LineRow(address: 0x1040, file: 0, line: 0, isEndSequence: true),
            LineRow(address: 0x1040, file: 3, line: 1),
            LineRow(address: 0x1048, file: 0, line: 0, isEndSequence: true),
        ]
        model.symbols = [
            SymbolEntry(name: alias, address: 0x1000, size: 0x40),
            SymbolEntry(name: main, address: 0x1000, size: 0x40),
            SymbolEntry(name: start, address: 0x1040, size: 0x10),
        ]
        return model
    }
}
