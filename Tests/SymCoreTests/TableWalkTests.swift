import Foundation
import SymBytes
import SymCore
import SymELF
import SymTable
import SymUnwind
import Symbolication
import Synchronization
import Testing
import TestSupport

/// A walk from the tables alone (`.csym` v5: the unwind rules with their DWARF expressions)
/// against the walk from the ELF files' CFI, on the real x86_64 cores of
/// `scripts/build-core-fixtures`: the same frames, registers included, through glibc's
/// `__restore_rt` (CFA and registers by expression) and a PLT entry (CFA by expression).
@Suite struct TableWalkTests {
    /// Tables converted once per module file (libc's takes a while in a debug build).
    static let converted = Mutex<[String: SymbolTable]>([:])

    static func table(_ path: String) throws -> SymbolTable {
        if let table = converted.withLock({ $0[path] }) { return table }
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: ELFFile(path: path), debugFile: nil))
        converted.withLock { $0[path] = table }
        return table
    }

    /// The core's modules walked by their tables alone, and by their ELF files' whole CFI.
    static func modules(_ core: CoreFile) throws -> (tables: [WalkModule], files: [WalkModule]) {
        var tables: [WalkModule] = [], files: [WalkModule] = []
        for module in core.modules {
            let table = try Self.table(module.path)
            tables.append(try #require(WalkModule(start: module.start, end: module.end, table: table), "\(module.path) has no rules"))
            files.append(WalkModule(start: module.start, end: module.end, binary: try ELFFile(path: module.path), wholeCFI: true))
        }
        return (tables, files)
    }

    static func core(_ name: String) throws -> CoreFile {
        let directory = try #require(CoreWalkTests.cores, "scripts/build-core-fixtures failed")
        return try CoreFile(file: MappedFile(path: "\(directory)/\(name)"))
    }

    /// The table's rule for the runtime address `address` of the module of `modules` mapping it.
    static func storedRule(at address: UInt64, core: CoreFile) throws -> StoredUnwindRule? {
        guard let module = core.modules.first(where: { address >= $0.start && address < $0.end }) else { return nil }
        let table = try Self.table(module.path)
        let bias = module.start &- (table.module.layout?.mappingBase ?? 0)
        return try table.storedUnwindRule(at: address &- bias)?.rule
    }

    @Test("Every thread walks from the tables alone as from the ELF files",
          arguments: ["signal-abort.core", "threads.core", "libc-strlen.core", "crash-O2.core", "null-call.core"])
    func tableWalkEqualsELFWalk(_ name: String) throws {
        let core = try Self.core(name)
        let (tables, files) = try Self.modules(core)
        for thread in core.threads {
            let fromTables = try core.walk(thread, modules: tables)
            let fromFiles = try core.walk(thread, modules: files)
            #expect(fromTables == fromFiles, "\(name) thread \(thread.id): \(fromTables.map(\.pc)) against \(fromFiles.map(\.pc))")
            #expect(fromTables.count > 2)
        }
    }

    @Test("Through __restore_rt by the table's expressions: the interrupted frame exact, found by CFI")
    func throughRestoreRT() throws {
        let core = try Self.core("signal-abort.core")
        let (tables, _) = try Self.modules(core)
        let thread = try #require(core.threads.first)
        let frames = try core.walk(thread, modules: tables)
        let interrupted = try #require(frames.firstIndex { $0.isInterrupted })
        #expect(frames[interrupted].trust == .cfi)
        // The trampoline's rule is an expression CFA (the saved rsp in the ucontext).
        let trampoline = frames[interrupted - 1]
        let rule = try #require(try Self.storedRule(at: trampoline.lookupAddress, core: core))
        #expect(rule.isSignalFrame && rule.cfaExpression != nil)
        #expect(rule.registers.contains { $0.kind == .expression })
    }

    @Test("From inside a PLT entry (past its push): the table's CFA expression gives gdb's frames")
    func throughPLT() throws {
        let directory = try #require(CoreWalkTests.cores, "scripts/build-core-fixtures failed")
        let core = directory + "/plt-" + UUID().uuidString + ".core"
        defer { try? FileManager.default.removeItem(atPath: core) }
        // gdb stops at strlen@plt + 11 (the lazy-binding jump, after `push $0`: the CFA is rsp +
        // 16 there, where a register rule would say rsp + 8) and writes the core.
        let run = try Tool.run("/usr/bin/timeout", ["60", "gdb", "-q", "-nx", "-batch", "-ex", "set startup-with-shell off",
                                                    "-ex", "starti", "-ex", "break *((char *)'strlen@plt' + 11)", "-ex", "continue",
                                                    "-ex", "generate-core-file \(core)", "-ex", "bt", directory + "/libc-strlen"])
        let gdbFrames = run.text.split(separator: "\n").filter { $0.hasPrefix("#") }.compactMap { line -> UInt64? in
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            return words.count > 1 && words[1].hasPrefix("0x") ? UInt64(words[1].dropFirst(2), radix: 16) : nil
        }
        try #require(gdbFrames.count == 3, "gdb: \(run.text) \(run.stderr)")
        let file = try CoreFile(file: MappedFile(path: core))
        let (tables, files) = try Self.modules(file)
        let thread = try #require(file.threads.first)
        let frames = try file.walk(thread, modules: tables)
        #expect(frames == (try file.walk(thread, modules: files)))
        #expect(Array(frames.map(\.pc).prefix(3)) == gdbFrames, "\(frames.map(\.pc)) against gdb's \(gdbFrames)")
        #expect(frames.dropFirst().first?.trust == .cfi)
        let rule = try #require(try Self.storedRule(at: gdbFrames[0], core: file))
        #expect(rule.cfaExpression != nil)
    }
}
