import Foundation
import SymELF
import SymTable
import Testing
@testable import Symbolication

/// `FrameRenderer` (the `lookup` hot path: names and paths cached by record) against the
/// plain path (`ModuleSymbols.frames`, Strings joined one by one) on real fixtures.
@Suite struct FrameRendererTests {
    static let fixtures = ["clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5", "gcc-c-O2-dwarf5-strip-debug", "clang-c-O2-dwarf4"]

    /// Addresses in the order a busy input would ask them: sampled addresses, each again later, and
    /// its neighbours (same range or the next), plus addresses in no function.
    static func addresses(_ model: SymbolModel) -> [UInt64] {
        let sampled = DifferentialTests.sampleAddresses(model, count: 300, seed: 11)
        var result: [UInt64] = [0, 1, UInt64.max]
        for address in sampled { result += [address, address + 1, address &- 1] }
        result += sampled.reversed()
        return result
    }

    /// The text answer built from `ModuleSymbols.frames`, as `crashsym lookup` documents it.
    static func expectedText(_ address: UInt64, _ frames: [SymbolicatedFrame]) -> String {
        var text = "0x" + String(address, radix: 16) + "\n"
        if frames.isEmpty { return text + "    ??\n" }
        for frame in frames {
            text += "    " + frame.function
            if !frame.file.isEmpty || frame.line != 0 {
                text += "  " + (frame.file.isEmpty ? "??" : frame.file) + ":\(frame.line)"
                if frame.column != 0 { text += ":\(frame.column)" }
            }
            if frame.inlined { text += "  (inlined)" }
            if frame.symbolOnly { text += "  (symbol table only)" }
            text += "\n"
        }
        return text
    }

    @Test(arguments: fixtures)
    func textAnswersEqualThePlainPath(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let model = try ModuleConverter.model(binary: binary)
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(model))
        let symbols = ModuleSymbols(table: table)
        var renderer = FrameRenderer(table: table, style: .text)
        var output = OutputBytes(capacity: 64)
        var inlined = 0
        for address in Self.addresses(model) {
            let start = output.count
            try renderer.render(address, into: &output)
            let frames = try symbols.frames(at: address)
            inlined += frames.filter(\.inlined).count
            let actual = String(decoding: output.bytes(start..<output.count), as: UTF8.self)
            #expect(actual == Self.expectedText(address, frames), "\(fixture) 0x\(String(address, radix: 16))")
        }
        if fixture.hasPrefix("clang-cpp-O2") { #expect(inlined > 0, "the fixture exercises inline chains") }
    }

    @Test(arguments: fixtures)
    func batchesAnswerAsOneAddressAtATime(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        let addresses = Self.addresses(try ModuleConverter.model(binary: binary))
        for style in [FrameRenderer.Style.text, .json] {
            var single = FrameRenderer(table: table, style: style)
            var expected = OutputBytes()
            for address in addresses { try single.render(address, into: &expected) }
            var batched = FrameRenderer(table: table, style: style)
            var actual = OutputBytes()
            // Uneven batches, so that cached names cross batch boundaries.
            var start = 0
            var size = 1
            while start < addresses.count {
                let end = min(addresses.count, start + size)
                let errors = addresses[start..<end].withUnsafeBufferPointer { batched.render($0, into: &actual) }
                #expect(errors.isEmpty)
                start = end
                size = size * 3 % 97 + 1
            }
            #expect(Array(actual.bytes) == Array(expected.bytes), "\(fixture) \(style)")
        }
    }

    @Test(arguments: fixtures)
    func jsonAnswersParseAndEqualThePlainPath(fixture: String) throws {
        let binary = try ELFFile(path: Corpus.fixture(fixture))
        let model = try ModuleConverter.model(binary: binary)
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(model))
        let symbols = ModuleSymbols(table: table)
        var renderer = FrameRenderer(table: table, style: .json)
        for address in Self.addresses(model) {
            var bytes: [UInt8] = []
            try renderer.render(address, into: &bytes)
            #expect(bytes.last == UInt8(ascii: "\n"))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            #expect(object["address"] as? String == "0x" + String(address, radix: 16))
            let frames = try #require(object["frames"] as? [[String: Any]])
            let expected = try symbols.frames(at: address)
            try #require(frames.count == expected.count, "0x\(String(address, radix: 16))")
            for (frame, plain) in zip(frames, expected) {
                #expect(frame["function"] as? String == plain.function)
                #expect(frame["mangled"] as? String == plain.mangled)
                #expect(frame["file"] as? String == plain.file)
                #expect(frame["line"] as? Int == Int(plain.line))
                #expect(frame["column"] as? Int == Int(plain.column))
                #expect(frame["inlined"] as? Bool == plain.inlined)
                #expect((frame["symbol_only"] as? Bool ?? false) == plain.symbolOnly)
            }
        }
    }

    static func bytes(_ text: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// Renderers sharing one `RenderedStrings` answer as a renderer of their own would, and a
    /// name or path one of them rendered the others read rather than render again.
    @Test func sharedStringsAnswerTheSame() throws {
        let binary = try ELFFile(path: Corpus.fixture("clang-cpp-O2-dwarf5"))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        let addresses = Self.addresses(try ModuleConverter.model(binary: binary))
        for style in [FrameRenderer.Style.text, .json] {
            for demangles in [true, false] {
                var alone = FrameRenderer(table: table, style: style, demangles: demangles)
                var expected = OutputBytes()
                for address in addresses { try alone.render(address, into: &expected) }
                let strings = FrameRenderer.RenderedStrings(table: table, style: style, demangles: demangles)
                #expect(strings.chunkCount == 0, "nothing is allocated before something is rendered")
                var first = FrameRenderer(table: table, strings: strings)
                var actual = OutputBytes()
                for address in addresses { try first.render(address, into: &actual) }
                #expect(Array(actual.bytes) == Array(expected.bytes), "\(style) \(demangles)")
                let chunks = strings.chunkCount
                #expect(chunks == 1)
                // The second renders everything from the first's entries: it keeps (allocates) nothing.
                var second = FrameRenderer(table: table, strings: strings)
                var again = OutputBytes()
                for address in addresses { try second.render(address, into: &again) }
                #expect(Array(again.bytes) == Array(expected.bytes), "\(style) \(demangles)")
                #expect(strings.chunkCount == chunks)
            }
        }
    }

    /// `prefault()` (what `lookup` calls before answering on several threads) maps the slots
    /// without changing them: entries published before it are still there after it, and
    /// renderers that come after read them instead of rendering again.
    @Test func prefaultingKeepsPublishedEntries() throws {
        let binary = try ELFFile(path: Corpus.fixture("clang-cpp-O2-dwarf5"))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        let addresses = Self.addresses(try ModuleConverter.model(binary: binary))
        let strings = FrameRenderer.RenderedStrings(table: table, style: .text)
        var first = FrameRenderer(table: table, strings: strings)
        var expected = OutputBytes()
        for address in addresses { try first.render(address, into: &expected) }
        func entries() -> [UnsafeRawBufferPointer?] {
            (0..<UInt32(table.statistics.names)).map { strings.entry(.function, $0) }
                + (0..<UInt32(table.statistics.files)).map { strings.entry(.path, $0) }
        }
        let before = entries()
        #expect(before.compactMap { $0 }.count > 100)
        strings.prefault()
        let after = entries()
        #expect(after.count == before.count)
        for (old, new) in zip(before, after) {
            #expect(old?.baseAddress == new?.baseAddress && old?.count == new?.count)
        }
        let chunks = strings.chunkCount
        var second = FrameRenderer(table: table, strings: strings)
        var again = OutputBytes()
        let errors = addresses.withUnsafeBufferPointer { second.render($0, into: &again) }
        #expect(errors.isEmpty)
        #expect(Array(again.bytes) == Array(expected.bytes))
        #expect(strings.chunkCount == chunks, "everything was read from the entries published before")
    }

    /// Names printed as stored (not demangled, or not mangled) and needing no escape are not
    /// copied: their entries are the table's own bytes; the output is the same.
    @Test func namesPrintedAsStoredStayInTheTable() throws {
        let binary = try ELFFile(path: Corpus.fixture("clang-cpp-O2-dwarf5"))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        let addresses = Self.addresses(try ModuleConverter.model(binary: binary))
        let base = try #require(table.baseAddress)
        for style in [FrameRenderer.Style.text, .json] {
            var alone = FrameRenderer(table: table, style: style, demangles: false)
            var expected = OutputBytes()
            for address in addresses { try alone.render(address, into: &expected) }
            let strings = FrameRenderer.RenderedStrings(table: table, style: style, demangles: false)
            var renderer = FrameRenderer(table: table, strings: strings)
            var actual = OutputBytes()
            let errors = addresses.withUnsafeBufferPointer { renderer.render($0, into: &actual) }
            #expect(errors.isEmpty)
            #expect(Array(actual.bytes) == Array(expected.bytes), "\(style)")
            var inTable = 0, rendered = 0
            for name in 0..<UInt32(table.statistics.names) {
                for kind in [FrameRenderer.RenderedStrings.Kind.function, .mangled] {
                    guard let entry = strings.entry(kind, name), let start = entry.baseAddress else { continue }
                    rendered += 1
                    if start >= base && start + entry.count <= base + table.byteCount {
                        inTable += 1
                        // The entry is the stored name itself.
                        let stored = try table.functionName(name)
                        table.withUTF8(stored) { #expect($0.baseAddress == start && $0.count == entry.count) }
                    }
                }
            }
            #expect(rendered > 100, "\(style)")
            // Every name of this C++ fixture needs no JSON escape; the empty name (`??`) is copied.
            #expect(inTable >= rendered - 1, "\(style): \(inTable) of \(rendered) in place")
        }
    }

    /// Threads rendering with shared strings at once (each with its own renderer, on overlapping
    /// addresses, so that they race to render the same names) each answer as one renderer alone.
    @Test func threadsSharingStringsAnswerTheSame() async throws {
        let binary = try ELFFile(path: Corpus.fixture("clang-cpp-O2-dwarf5"))
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: binary))
        let addresses = Self.addresses(try ModuleConverter.model(binary: binary))
        for style in [FrameRenderer.Style.text, .json] {
            var alone = FrameRenderer(table: table, style: style)
            var expected = OutputBytes()
            for address in addresses { try alone.render(address, into: &expected) }
            let expectedBytes = Array(expected.bytes)
            let strings = FrameRenderer.RenderedStrings(table: table, style: style)
            let outputs = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var renderer = FrameRenderer(table: table, strings: strings)
                        var output = OutputBytes()
                        let errors = addresses.withUnsafeBufferPointer { renderer.render($0, into: &output) }
                        #expect(errors.isEmpty)
                        return Array(output.bytes)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outputs.count == 4)
            for output in outputs { #expect(output == expectedBytes, "\(style)") }
        }
    }

    @Test func theCacheForgetsEverythingWhenItsArenaIsFull() {
        var cache = FrameRenderer.ByteCache(slots: 4, arenaLimit: 8)
        var output = OutputBytes(capacity: 1)
        cache.store(1, Self.bytes("abcde"))
        #expect(cache.append(1, to: &output))
        #expect(!cache.append(2, to: &output))
        // 5 + 5 bytes would pass the limit: the arena restarts and entry 1 is gone.
        cache.store(2, Self.bytes("fghij"))
        #expect(!cache.append(1, to: &output))
        #expect(cache.append(2, to: &output))
        // Bytes over the limit are never cached.
        cache.store(3, Self.bytes("0123456789"))
        #expect(!cache.append(3, to: &output))
        #expect(String(decoding: output.bytes, as: UTF8.self) == "abcdefghij")
    }

    @Test func inputLines() throws {
        let table = try SymbolTable(bytes: try ModuleConverter.table(binary: ELFFile(path: Corpus.fixture("gcc-c-O2-dwarf5"))))
        var renderer = FrameRenderer(table: table, style: .text)
        func bytes<R>(_ line: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            var copy = line
            return copy.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        #expect(bytes(" \t\r", FrameRenderer.isBlank) && bytes(" \t\r", FrameRenderer.parseAddress) == nil)
        #expect(bytes("", FrameRenderer.isBlank) && bytes("", FrameRenderer.parseAddress) == nil)
        #expect(!bytes("0xg1", FrameRenderer.isBlank) && bytes("0xg1", FrameRenderer.parseAddress) == nil)
        #expect(!bytes("0x10000000000000000", FrameRenderer.isBlank) && bytes("0x10000000000000000", FrameRenderer.parseAddress) == nil)
        let address = try #require(bytes("  0X1A2b\r", FrameRenderer.parseAddress))
        #expect(!bytes("  0X1A2b\r", FrameRenderer.isBlank) && address == 0x1a2b)
        var output = OutputBytes()
        try renderer.render(address, into: &output)
        #expect(String(decoding: output.bytes, as: UTF8.self).hasPrefix("0x1a2b\n"))
    }
}
