import TestSupport
import Foundation
import SymELF
import SymTable
import Testing
@testable import Symbolication

/// Symbolication compared with llvm-symbolizer (`--inlining --no-demangle`) on sampled addresses
/// inside functions: the function name, file and line of every frame in the inline chain must agree.
@Suite struct DifferentialTests {
    struct Outcome {
        var addresses = 0
        var identical = 0
        var explained: [String: Int] = [:]
        var unexplained: [String] = []

        /// Identical or differing only as documented (`explain`).
        var rate: Double { addresses == 0 ? 0 : Double(identical + explained.values.reduce(0, +)) / Double(addresses) }
    }

    /// Compares crashsym with llvm-symbolizer on `sampleCount` addresses of `path`.
    /// With `debugFile`, `path` is a stripped binary converted with it (llvm-symbolizer finds the
    /// same file by build-id).
    static func compare(path: String, debugFile: String? = nil, oraclePath: String? = nil, sampleCount: Int, seed: UInt64,
                        decoder: DWARFDecoder = .builtin) throws -> Outcome {
        let binary = try ELFFile(path: path)
        let model = try ModuleConverter.model(binary: binary, debugFile: try debugFile.map { try ELFFile(path: $0) },
                                              decoder: decoder, threads: 2)
        let symbols = ModuleSymbols(table: try SymbolTable(bytes: try SymbolTableWriter.write(model)))
        let addresses = sampleAddresses(model, count: sampleCount, seed: seed)
        let oracle = try LLVMSymbolizer.symbolize(object: oraclePath ?? path, addresses: addresses)
        try #require(oracle.count == addresses.count, "llvm-symbolizer answered \(oracle.count) of \(addresses.count)")
        let context = try AliasContext(model: model, files: [binary] + (try debugFile.map { [try ELFFile(path: $0)] } ?? []))
        var outcome = Outcome()
        for (address, expected) in zip(addresses, oracle) {
            outcome.addresses += 1
            let ours = try symbols.frames(at: address).map {
                LLVMSymbolizer.Frame(function: $0.mangled, file: $0.file, line: Int($0.line), column: Int($0.column))
            }
            if same(ours, expected) {
                outcome.identical += 1
            } else if let reason = explain(ours: ours, oracle: expected, context: context) {
                outcome.explained[reason, default: 0] += 1
            } else {
                outcome.unexplained.append("0x\(String(address, radix: 16)): ours \(ours) llvm \(expected)")
            }
        }
        return outcome
    }

    /// Equal on function, file and line for every frame (columns are compared by `explain`).
    static func same(_ ours: [LLVMSymbolizer.Frame], _ oracle: [LLVMSymbolizer.Frame]) -> Bool {
        guard ours.count == oracle.count else { return false }
        return zip(ours, oracle).allSatisfy { $0.function == $1.function && $0.file == $1.file && $0.line == $1.line }
    }

    /// Known, understood differences; nil for anything else.
    ///
    /// The one difference by design (README, "Several names at one address"): where several
    /// symbols share a function's first byte, the DWARF subprogram names the physical frame after
    /// the one of them that bears its name, while llvm-symbolizer names it after the last of them
    /// in `.symtab`. Accepted only when every other field agrees, both names are symbols at one
    /// address of the files' tables, and a physical DWARF function named as ours starts there.
    static func explain(ours: [LLVMSymbolizer.Frame], oracle: [LLVMSymbolizer.Frame], context: AliasContext) -> String? {
        guard ours.count == oracle.count, let mine = ours.last, let theirs = oracle.last,
              mine.function != theirs.function, mine.file == theirs.file, mine.line == theirs.line,
              zip(ours.dropLast(), oracle.dropLast()).allSatisfy({ $0.function == $1.function && $0.file == $1.file && $0.line == $1.line })
        else { return nil }
        for address in context.addresses[theirs.function] ?? [] where context.addresses[mine.function]?.contains(address) == true {
            if context.dwarfFunctions[address]?.contains(mine.function) == true {
                return "the DWARF subprogram names another of the symbols at its address (README: Several names at one address)"
            }
        }
        return nil
    }

    /// The files' code symbols by name (their addresses) and the model's physical DWARF
    /// functions by first address (their names), for `explain`.
    struct AliasContext {
        var addresses: [String: Set<UInt64>] = [:]
        var dwarfFunctions: [UInt64: Set<String>] = [:]

        init(model: SymbolModel, files: [ELFFile]) throws {
            for file in files {
                for symbol in try file.symbols() where symbol.type == 0 || symbol.isFunction {
                    addresses[symbol.name, default: []].insert(symbol.value)
                }
            }
            for scope in model.scopes where !scope.isInlined {
                for index in scope.rangeIndices {
                    dwarfFunctions[model.ranges[index].start, default: []].insert(model.strings[Int(scope.name)])
                }
            }
        }
    }

    /// Addresses inside physical functions: every function's first byte, plus random bytes of
    /// random ranges (seeded), sorted and unique.
    static func sampleAddresses(_ model: SymbolModel, count: Int, seed: UInt64) -> [UInt64] {
        var generator = SplitMix64(seed: seed)
        let ranges = model.scopes.lazy.filter { !$0.isInlined }.flatMap { scope in
            scope.rangeIndices.map { model.ranges[$0] }
        }
        let all = Array(ranges)
        guard !all.isEmpty else { return [] }
        var addresses = Set<UInt64>()
        if all.count <= count / 2 {
            for range in all { addresses.insert(range.start) }
        }
        var attempts = 0
        while addresses.count < count && attempts < count * 4 {
            attempts += 1
            let range = all[Int(generator.next() % UInt64(all.count))]
            addresses.insert(range.start + generator.next() % (range.end - range.start))
        }
        return addresses.sorted()
    }

    static func report(_ name: String, _ outcome: Outcome) {
        var text = "differential \(name): \(outcome.identical)/\(outcome.addresses) identical ("
            + String(format: "%.3f%%", outcome.rate * 100) + " identical or explained)"
        for (reason, count) in outcome.explained.sorted(by: { $0.key < $1.key }) {
            text += "\n  explained (\(count)): \(reason)"
        }
        for line in outcome.unexplained.prefix(25) { text += "\n  UNEXPLAINED \(line)" }
        print(text)
    }

    @Test("python3.11d (gcc 12, DWARF 5) agrees with llvm-symbolizer")
    func python() throws {
        let outcome = try Self.compare(path: Corpus.python, sampleCount: 4000, seed: 1)
        Self.report("python3.11d", outcome)
        #expect(outcome.addresses >= 3000)
        #expect(outcome.rate >= 0.995)
        #expect(outcome.unexplained.isEmpty)
    }

    @Test("libc's separate debug file (libc6-dbg) agrees with llvm-symbolizer")
    func libc() throws {
        let path = try #require(Corpus.libcDebugFile, "libc6-dbg is not installed")
        let outcome = try Self.compare(path: path, sampleCount: 3000, seed: 2)
        Self.report("libc.debug", outcome)
        #expect(outcome.addresses >= 2000)
        #expect(outcome.rate >= 0.995)
        #expect(outcome.unexplained.isEmpty)
    }

    /// The common case of a crash report: the installed, stripped libc.so.6 with its debug file.
    /// Functions are named from the library's own `.dynsym` as llvm-symbolizer names them (`abort`,
    /// `__libc_start_main`), not from the debug file's aliases (`__GI_abort`, `…@GLIBC_2.2.5`).
    @Test("stripped libc.so.6 with its debug file agrees with llvm-symbolizer")
    func strippedLibc() throws {
        let debug = try #require(Corpus.libcDebugFile, "libc6-dbg is not installed")
        let library = try #require(["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"]
            .first { FileManager.default.fileExists(atPath: $0) })
        let outcome = try Self.compare(path: library, debugFile: debug, sampleCount: 3000, seed: 4)
        Self.report("libc.so.6 + debug file", outcome)
        #expect(outcome.addresses >= 2000)
        #expect(outcome.rate >= 0.995)
        #expect(outcome.unexplained.isEmpty)
    }
}

/// Every committed fixture with DWARF, compared with llvm-symbolizer. llvm-symbolizer 21 reads
/// neither zstd nor `.zdebug` sections, so those fixtures are compared with their uncompressed twin.
@Suite struct FixtureDifferentialTests {
    static let fixtures: [(path: String, oracle: String?)] = [
        ("gcc-c-O0-dwarf2", nil), ("gcc-c-O0-dwarf3", nil), ("gcc-c-O0-dwarf4", nil), ("gcc-c-O0-dwarf5", nil),
        ("gcc-c-O2-dwarf5", nil), ("gcc-c-O2-dwarf5-nopie", nil), ("gcc-cpp-O2-dwarf5", nil),
        ("gcc-c-O2-dwarf5-zlib", nil), ("gcc-c-O2-dwarf5-zlib-gnu", "gcc-c-O2-dwarf5"),
        ("gcc-c-O2-dwarf5-zstd", "gcc-c-O2-dwarf5"), ("clang-c-O0-dwarf4", nil), ("clang-c-O0-dwarf5", nil),
        ("clang-c-O2-dwarf4", nil), ("clang-c-O2-dwarf5", nil), ("clang-c-O2-dwarf5-gz", nil),
        ("clang-cpp-O0-dwarf5", nil), ("clang-cpp-O2-dwarf4", nil), ("clang-cpp-O2-dwarf5", nil),
        ("clang-cpp-O2-dwarf5-zstd", "clang-cpp-O2-dwarf5"), ("swift-Onone", nil), ("swift-O", nil),
        ("rust-O0", nil), ("rust-O2", nil), ("rust-O2-dwarf5-v0", nil), ("libgreet.so", nil), ("greet-app", nil),
        ("aarch64-gcc-c-O2", nil), ("aarch64-clang-start-O2", nil), ("libnative-android21-aarch64.so", nil),
        ("i386-clang-start-O2", nil), ("armv7-clang-start-O2", nil), ("riscv64-clang-start-O2", nil),
        ("debuglink/prog.debug", nil),
    ]

    @Test("fixture agrees with llvm-symbolizer", arguments: fixtures.map(\.path))
    func fixture(name: String) throws {
        let oracle = Self.fixtures.first { $0.path == name }?.oracle.map(Corpus.fixture)
        let outcome = try DifferentialTests.compare(path: Corpus.fixture(name), oraclePath: oracle, sampleCount: 600,
                                                    seed: 3)
        DifferentialTests.report(name, outcome)
        #expect(outcome.addresses > 0)
        #expect(outcome.rate >= 0.995)
        #expect(outcome.unexplained.isEmpty)
    }
}
