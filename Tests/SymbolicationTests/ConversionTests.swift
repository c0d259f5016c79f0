import TestSupport
import Foundation
import SymBytes
import SymELF
import SymTable
import Testing
@testable import Symbolication

/// Conversion edge cases: stripped binaries, separate debug files, hostile input end to end.
@Suite struct ConversionTests {
    /// nm's defined text symbols of a file (name to address).
    static func textSymbols(_ path: String) throws -> [String: UInt64] {
        let text = try Tool.output("/usr/bin/nm", ["--defined-only", path])
        var result: [String: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[1] == "t" || parts[1] == "T", let value = UInt64(parts[0], radix: 16) {
                result[String(parts[2])] = value
            }
        }
        return result
    }

    /// A zero-size label covers the rest of its section, not every address above it. (llvm-symbolizer
    /// names `_fini` up to the next symbol of any kind, here `_IO_stdin_used` in `.rodata`; a crash
    /// frame there is in no function, and we say so.)
    @Test func aZeroSizeLastLabelEndsWithItsSection() throws {
        let path = Corpus.fixture("gcc-c-O2-dwarf5")
        let binary = try ELFFile(path: path)
        let fini = try #require(try binary.symbols().first { $0.name == "_fini" })
        try #require(fini.size == 0)
        let section = binary.sections[Int(fini.sectionIndex)]
        let symbols = ModuleSymbols(table: try SymbolTable(bytes: try ModuleConverter.table(binary: binary)))
        #expect(try symbols.frames(at: fini.value).first?.mangled == "_fini")
        #expect(try symbols.frames(at: section.address + section.size - 1).first?.mangled == "_fini")
        #expect(try symbols.frames(at: section.address + section.size).isEmpty)
        #expect(try symbols.frames(at: 0xffff_f000).isEmpty)
    }

    @Test func aBinaryWithoutDWARFGivesSymbolTableNamesOnly() throws {
        let path = Corpus.fixture("gcc-c-O2-dwarf5-strip-debug")
        let binary = try ELFFile(path: path)
        #expect(!binary.hasDWARF)
        let symbols = ModuleSymbols(table: try SymbolTable(bytes: try ModuleConverter.table(binary: binary)))
        let functions = try Self.textSymbols(path)
        try #require(functions.count >= 5)
        for (name, address) in functions where !name.hasPrefix("_") && !name.contains(".") {
            let frames = try symbols.frames(at: address + 1)
            #expect(frames.count == 1, "\(name)")
            #expect(frames.first?.mangled == name)
            #expect(frames.first?.symbolOnly == true)
            #expect(frames.first?.line == 0)
        }
    }

    @Test func aStrippedBinaryWithItsDebugFileEqualsTheUnstrippedOne() throws {
        let stripped = try ELFFile(path: Corpus.fixture("debuglink/prog"))
        let locator = DebugFileLocator(includeSystemDirectory: false)
        let debugFile = try #require(locator.locate(for: stripped))
        #expect(debugFile.path.hasSuffix("debuglink/prog.debug"))
        #expect(debugFile.buildID == stripped.buildID)
        let viaDebugFile = try SymbolTable(bytes: try ModuleConverter.table(binary: stripped, debugFile: debugFile))
        let direct = try SymbolTable(bytes: try ModuleConverter.table(binary: debugFile))
        #expect(viaDebugFile.statistics.lineRows == direct.statistics.lineRows)
        #expect(viaDebugFile.statistics.functions == direct.statistics.functions)
        #expect(viaDebugFile.statistics.lineRows > 100)
    }

    @Test func aDebugFileWithAnotherBuildIDIsNeverUsed() throws {
        let stripped = try ELFFile(path: Corpus.fixture("stripped-buildid/prog"))
        let other = try ELFFile(path: Corpus.fixture("debuglink/prog.debug"))
        #expect(!DebugFileLocator().matches(other, stripped))
        let locator = DebugFileLocator(debugDirectories: [Corpus.fixture("debugdir")], includeSystemDirectory: false)
        let found = try #require(locator.locate(for: stripped))
        #expect(found.buildID == stripped.buildID)
    }

    /// Truncated and bit-flipped fixtures through the whole conversion (ELF, DWARF, table writer,
    /// table reader): an error or a table, never a trap. Seeded, so failures reproduce.
    @Test("hostile ELF files through the whole conversion", arguments: ["gcc-c-O2-dwarf5", "clang-cpp-O2-dwarf5",
                                                                       "gcc-c-O2-dwarf5-zstd", "rust-O2"])
    func hostile(name: String) throws {
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Corpus.fixture(name))))
        var generator = SplitMix64(seed: 0xC5_5E_ED ^ UInt64(name.utf8.count))
        var converted = 0, rejected = 0
        func attempt(_ bytes: [UInt8]) {
            do {
                let binary = try ELFFile(bytes: bytes)
                let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary, threads: 2))
                for _ in 0..<8 { _ = try table.frames(at: generator.next() % 0x10000) }
                converted += 1
            } catch {
                rejected += 1
            }
        }
        // Truncations at 200 seeded lengths, plus bit flips in the DWARF sections and anywhere.
        for _ in 0..<200 { attempt(Array(original.prefix(Int(generator.next() % UInt64(original.count))))) }
        let binary = try ELFFile(bytes: original)
        let dwarf = binary.sections.filter { $0.name.hasPrefix(".debug") && $0.size > 0 }
        for round in 0..<600 {
            var mutated = original
            let flips = 1 + Int(generator.next() % 8)
            for _ in 0..<flips {
                let offset: Int
                if round % 2 == 0, let section = dwarf.randomElement(using: &generator) {
                    offset = Int(section.offset) + Int(generator.next() % section.size)
                } else {
                    offset = Int(generator.next() % UInt64(mutated.count))
                }
                mutated[offset] ^= UInt8(truncatingIfNeeded: 1 << (generator.next() % 8))
            }
            attempt(mutated)
        }
        #expect(converted + rejected == 800)
        #expect(converted > 0, "no mutant converted: the test would not notice a decoder that rejects everything")
    }
}
