import Foundation
import SymDemangle
import SymELF
import SymTable
import TestSupport
import Testing
@testable import Symbolication

/// Swift names demangled at conversion and stored in the table (`.csym` v2): exactly what lookup
/// printed when it demangled them itself, and lookup answers as from a table without them.
@Suite struct StoredNameTests {
    static let fixtures = ["swift-O", "swift-Onone"]

    /// Every function name's stored form: `Demangler.withDemangled(utf8:)`'s bytes for the names
    /// the renderer demangles with the Swift runtime, nothing for the others; and the toolchain's
    /// `swift-demangle` prints the same for every one stored (its default spelling, with type sugar).
    @Test(arguments: fixtures)
    func storedFormsAreTheRuntimeDemangling(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary, threads: 2))
        #expect(table.hasStoredDemangledNames)
        let demangler = Demangler()
        var scratch = DecompressionScratch()
        var stored: [(mangled: String, demangled: String)] = []
        var swiftNames = 0
        for index in 0..<UInt32(table.statistics.names) {
            var name: [UInt8] = []
            table.withUTF8(try table.functionName(index)) { name = Array($0) }
            let text = String(decoding: name, as: UTF8.self)
            var expected: [UInt8]?
            if FrameRenderer.mayBeMangled(name) && Demangler.scheme(of: text) == .swift {
                swiftNames += 1
                _ = name.withUnsafeBytes { raw in demangler.withDemangled(utf8: raw) { expected = Array($0) } }
            }
            let block = try table.demangledNames(inBlockOf: index, into: &scratch)
            let actual = block.name(ofRecord: index).map { Array($0) }
            #expect(actual == expected, "\(fixture): \(text)")
            if let actual { stored.append((text, String(decoding: actual, as: UTF8.self))) }
        }
        #expect(swiftNames > 20 && stored.count > 20, "\(fixture) has Swift names to store")

        let run = try Tool.run("/opt/swift/usr/bin/swift-demangle", [],
                               input: Data(stored.map(\.mangled).joined(separator: "\n").utf8 + [0x0A]))
        #expect(run.status == 0)
        let printed = run.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(printed.count >= stored.count)
        for (entry, line) in zip(stored, printed) {
            #expect(entry.demangled == line, "\(fixture): \(entry.mangled)")
        }
    }

    /// `lookup`'s renderer answers from the table with stored names byte for byte as from the same
    /// model's table written without them (every name demangled at lookup, as before v2): text
    /// and JSON, demangled or not, one address at a time and in batches, one renderer or several
    /// sharing their strings.
    @Test(arguments: fixtures)
    func answersEqualTheTableWithoutStoredNames(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let model = try ModuleConverter.model(binary: binary)
        let plain = try SymbolTable(bytes: try SymbolTableWriter.write(model))
        let stored = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        #expect(!plain.hasStoredDemangledNames && stored.hasStoredDemangledNames)
        var addresses = FrameRendererTests.addresses(model)
        addresses += model.symbols.flatMap { [$0.address, $0.address + 1] }
        for style in [FrameRenderer.Style.text, .json] {
            for demangles in [true, false] {
                var expected = OutputBytes()
                var reference = FrameRenderer(table: plain, style: style, demangles: demangles)
                for address in addresses { try reference.render(address, into: &expected) }

                var single = OutputBytes()
                var renderer = FrameRenderer(table: stored, style: style, demangles: demangles)
                for address in addresses { try renderer.render(address, into: &single) }
                #expect(Self.firstDifference(single, expected) == nil, "\(fixture) \(style) demangles: \(demangles)")

                // Two renderers sharing strings, in batches: the second finds names the first
                // published from a block, and decompresses the blocks the first did not.
                let strings = FrameRenderer.RenderedStrings(table: stored, style: style, demangles: demangles)
                for pass in 0..<2 {
                    var batched = OutputBytes()
                    var shared = FrameRenderer(table: stored, strings: strings)
                    let half = pass == 0 ? addresses.count / 2 : addresses.count
                    let errors = addresses[0..<half].withUnsafeBufferPointer { shared.render($0, into: &batched) }
                    #expect(errors.isEmpty)
                    var reference = FrameRenderer(table: plain, style: style, demangles: demangles)
                    var prefix = OutputBytes()
                    for address in addresses[0..<half] { try reference.render(address, into: &prefix) }
                    #expect(Self.firstDifference(batched, prefix) == nil, "\(fixture) \(style) demangles: \(demangles) pass \(pass)")
                }
            }
        }
    }

    /// The first line where `actual` and `expected` differ (both lines), nil when they are equal.
    static func firstDifference(_ actual: borrowing OutputBytes, _ expected: borrowing OutputBytes) -> String? {
        let left = String(decoding: actual.bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let right = String(decoding: expected.bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for (index, (a, b)) in zip(left, right).enumerated() where a != b {
            return "line \(index + 1): \(a) -- expected: \(b)"
        }
        return left.count == right.count ? nil : "\(left.count) lines, expected \(right.count)"
    }

    /// Stored forms are printed as stored in text and escaped in JSON: in place (no copy) where
    /// JSON needs no escape, copied and escaped where it does; neighbours in one block each get
    /// their own form.
    @Test func storedFormsAreEscapedForJSON() throws {
        struct Forms: StoredNameProvider {
            static let forms: [String: String] = [
                "$sA": #"A.quote"d(back\slash)"#, "$sB": "B.plain()", "$sC": "C.tab\there", "$sD": "",
            ]
            func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
                guard let form = Self.forms[String(decoding: name, as: UTF8.self)] else { return }
                var text = form
                text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            }
        }
        var model = SymbolModel(module: ModuleIdentity(buildID: [9], machine: 62, is64Bit: true, name: "m"))
        let names = ["$sA", "$sB", "$sC", "$sD", "c_name"]
        for (index, name) in names.enumerated() {
            model.symbols.append(SymbolEntry(name: model.appendString(name), address: 0x1000 + UInt64(index) * 16, size: 16))
        }
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(model, storedNames: Forms()))
        #expect(table.hasStoredDemangledNames)
        for style in [FrameRenderer.Style.text, .json] {
            var renderer = FrameRenderer(table: table, style: style)
            for (index, name) in names.enumerated() {
                var output = OutputBytes()
                try renderer.render(0x1000 + UInt64(index) * 16, into: &output)
                let printed = String(decoding: output.bytes, as: UTF8.self)
                let form = Forms.forms[name] ?? name
                if style == .text {
                    let address = String(0x1000 + index * 16, radix: 16)
                    #expect(printed == "0x\(address)\n    \(form)  (symbol table only)\n", "\(name): \(printed)")
                } else {
                    var escaped = ""
                    for character in form.unicodeScalars {
                        switch character {
                        case "\"": escaped += #"\""#
                        case "\\": escaped += #"\\"#
                        case "\t": escaped += #"\t"#
                        default: escaped.unicodeScalars.append(character)
                        }
                    }
                    #expect(printed.contains(#""function":""# + escaped + #"","mangled":""# + name + "\""), "\(name): \(printed)")
                }
            }
        }
    }

    /// C, C++ and Rust tables store nothing: their names are cheap to demangle at lookup, and the
    /// table keeps its size (one 4-byte offset more than v1's sections).
    @Test(arguments: ["clang-cpp-O2-dwarf5", "gcc-c-O2-dwarf5", "rust-O2"])
    func otherLanguagesStoreNothing(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let bytes = try ModuleConverter.table(binary: binary)
        #expect(!(try SymbolTable(bytes: bytes)).hasStoredDemangledNames)
        #expect(bytes == (try SymbolTableWriter.write(try ModuleConverter.model(binary: binary))))
    }
}
