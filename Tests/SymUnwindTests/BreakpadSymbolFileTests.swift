import Foundation
import SymELF
import Symbolication
import Testing
import TestSupport

/// Every record of `dump --format breakpad` but the CFI (`BreakpadOracleTests`) read back by an
/// independent reader: Sentry's `symbolic` opens our `.sym` as a Breakpad object and builds a
/// `SymCache` from it (its MODULE, INFO CODE_ID, FILE, FUNC, line, INLINE_ORIGIN, INLINE and
/// PUBLIC records); the same library builds one from the ELF file's own DWARF and symbol table.
/// At every address where one of our records starts or ends, both must give the same frames:
/// the function's address, the file, the line, and the inline chain frame by frame.
@Suite struct BreakpadSymbolFileTests {
    /// For the ELF file and the `.sym` file: ids, then each address's frames (innermost first).
    static let script = """
        import sys, json, re
        from symbolic import Archive, SymCache
        def open_object(path):
            return next(iter(Archive.open(path).iter_objects()))
        elf, sym = open_object(sys.argv[1]), open_object(sys.argv[2])
        elf_cache, sym_cache = SymCache.from_object(elf), SymCache.from_object(sym)
        addresses = [int(word, 16) for word in sys.argv[3].split(",")]
        def frames(cache, address):
            return [[frame.sym_addr, frame.full_path, frame.line, frame.symbol] for frame in cache.lookup(address)]
        json.dump({"ids": [[elf.debug_id, elf.code_id], [sym.debug_id, sym.code_id, sym.file_format]],
                   "lookups": [[address, frames(elf_cache, address), frames(sym_cache, address)] for address in addresses]},
                  sys.stdout)
        """

    /// The addresses where a FUNC, line, INLINE range or PUBLIC record starts, and each range's last byte.
    static func recordAddresses(_ text: String) -> [UInt64] {
        var addresses = Set<UInt64>()
        func range(_ start: Substring, _ size: Substring) {
            guard let start = UInt64(start, radix: 16), let size = UInt64(size, radix: 16), size > 0 else { return }
            addresses.insert(start)
            addresses.insert(start + size - 1)
        }
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            switch words.first {
            case "FUNC": if words.count >= 4 { range(words[1], words[2]) }
            case "PUBLIC": if words.count >= 2, let address = UInt64(words[1], radix: 16) { addresses.insert(address) }
            case "INLINE":
                for index in stride(from: 5, to: words.count - 1, by: 2) { range(words[index], words[index + 1]) }
            case .some(let first) where UInt64(first, radix: 16) != nil && words.count == 4: range(words[0], words[1])
            default: break
            }
        }
        return addresses.sorted()
    }

    /// A function name's own identifier: its last component before any template arguments or
    /// parameters (`fixture::app::run(int, char**)` is `run`).
    static func identifier(_ name: String) -> String {
        let characters = Array(name)
        // Parameters go (the first "(" outside template arguments, not a leading one).
        var depth = 0, end = characters.count
        for (index, character) in characters.enumerated() {
            if character == "<" { depth += 1 } else if character == ">" { depth -= 1 }
            if depth == 0 && character == "(" && index > 0 { end = index; break }
        }
        // The last component, then its template arguments.
        depth = 0
        var start = 0
        for index in 0..<end {
            if characters[index] == "<" { depth += 1 } else if characters[index] == ">" { depth -= 1 }
            if depth == 0 && index + 1 < end && characters[index] == ":" && characters[index + 1] == ":" { start = index + 2 }
        }
        var component = characters[start..<end]
        if let open = component.dropFirst().firstIndex(of: "<") { component = component[..<open] }
        return String(component)
    }

    /// The symbols symbolic gives from the ELF file (linkage names) demangled: c++filt for C++ and
    /// Rust, the toolchain's swift-demangle for Swift.
    static func demangled(_ names: Set<String>) throws -> [String: String] {
        let sorted = names.sorted()
        var result: [String: String] = [:]
        let cxx = try Tool.run("/usr/bin/c++filt", [], input: Data(sorted.joined(separator: "\n").utf8))
        for (name, text) in zip(sorted, cxx.text.split(separator: "\n", omittingEmptySubsequences: false)) { result[name] = String(text) }
        let swift = sorted.filter { $0.hasPrefix("$s") }
        if !swift.isEmpty {
            let output = try Tool.output("/opt/swift/usr/bin/swift-demangle", ["-compact"] + swift)
            for (name, text) in zip(swift, output.split(separator: "\n")) { result[name] = String(text) }
        }
        return result
    }

    static let fixtures = ["gcc-cpp-O2-dwarf5", "clang-cpp-O2-dwarf4", "rust-O2", "swift-O", "gcc-c-O2-dwarf5",
                           "gcc-c-O0-dwarf2", "aarch64-gcc-c-O2", "libgreet.so", "gcc-c-O2-dwarf5-strip-debug"]

    @Test("symbolic reads our .sym into the frames it reads from the ELF file, at every record's first and last address",
          arguments: fixtures)
    func symbolicReadsTheSymbolFile(_ name: String) throws {
        let path = UnwindFixtures.elf(name)
        let binary = try ELFFile(path: path)
        let text = try BreakpadWriter.symbolFile(binary: binary)
        // Every record kind is written where the module has what it describes.
        let kinds = Set(text.split(separator: "\n").map { line -> String in
            let words = line.split(separator: " ")
            if words.first == "STACK" { return words.count > 2 && words[2] == "INIT" ? "STACK CFI INIT" : "STACK CFI" }
            if words.first == "INFO" { return "INFO CODE_ID" }
            return UInt64(words[0], radix: 16) != nil ? "line" : String(words[0])
        })
        var expected: Set<String> = ["MODULE", "INFO CODE_ID", "PUBLIC", "STACK CFI INIT", "STACK CFI"]
        if name != "gcc-c-O2-dwarf5-strip-debug" { expected.formUnion(["FILE", "FUNC", "line", "INLINE_ORIGIN", "INLINE"]) }
        #expect(kinds == expected, "\(name): \(kinds.sorted())")

        let file = NSTemporaryDirectory() + "crashsym-breakpad-\(name)-" + UUID().uuidString + ".sym"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let addresses = Self.recordAddresses(text)
        #expect(addresses.count > 10)
        guard FileManager.default.isExecutableFile(atPath: UnwindFixtures.symbolicPython) else {
            throw UnwindFixtures.OracleMissing(message: "symbolic is not installed at \(UnwindFixtures.symbolicPython): run scripts/deps test")
        }
        let run = try Tool.run(UnwindFixtures.symbolicPython, ["-c", Self.script, path, file,
                                                               addresses.map { String($0, radix: 16) }.joined(separator: ",")])
        try #require(run.status == 0, "symbolic: \(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        // The module: symbolic reads the .sym's MODULE id and INFO CODE_ID as the ids it computes
        // from the ELF file's build-id (Breakpad's rule).
        let ids = try #require(document["ids"] as? [[String]])
        #expect(ids[1][2] == "breakpad")
        #expect(ids[0][0] == ids[1][0] && ids[0][1] == ids[1][1], "\(ids)")

        let lookups = try #require(document["lookups"] as? [[Any]])
        #expect(lookups.count == addresses.count)
        var names = Set<String>()
        var pairs: [(elf: String, sym: String)] = []
        var mismatches = 0
        for lookup in lookups {
            let address = lookup[0] as? Int ?? 0
            let fromELF = lookup[1] as? [[Any]] ?? [], fromSym = lookup[2] as? [[Any]] ?? []
            // Address, file and line of each frame, and the depth of the inline chain.
            let place = { (frames: [[Any]]) in frames.map { "\($0[0]) \($0[1]):\($0[2])" } }
            if place(fromELF) != place(fromSym) {
                mismatches += 1
                if mismatches <= 3 { Issue.record("\(name) 0x\(String(address, radix: 16)): ELF \(fromELF), .sym \(fromSym)") }
            }
            for (elf, sym) in zip(fromELF, fromSym) {
                guard let elfName = elf[3] as? String, let symName = sym[3] as? String else { continue }
                names.insert(elfName)
                pairs.append((elfName, symName))
            }
        }
        #expect(mismatches == 0, "\(name): \(mismatches) of \(lookups.count) addresses differ")
        // Names: ours are demangled (Breakpad's .sym convention) and chosen by the conversion
        // (DWARF names, Rust's hash and compiler clone suffixes left out), symbolic's from the ELF
        // file are linkage names: each of ours must name the same function, its identifier in
        // the demangled linkage name.
        let demangled = try Self.demangled(names)
        var wrongNames = Set<String>()
        for pair in pairs where !(demangled[pair.elf] ?? pair.elf).contains(Self.identifier(pair.sym)) {
            wrongNames.insert("\(pair.elf) / \(pair.sym)")
        }
        #expect(wrongNames.isEmpty, "\(name): \(wrongNames.sorted().prefix(3))")
    }

    @Test("The name identifier used to compare: last component, no template arguments or parameters")
    func identifiers() {
        #expect(Self.identifier("fixture::app::run(int, char**)") == "run")
        #expect(Self.identifier("__adjust_heap<__gnu_cxx::__normal_iterator<int*> >") == "__adjust_heap")
        #expect(Self.identifier("<core::slice::iter::Iter<T> as core::iter::Iterator>::size_hint") == "size_hint")
        #expect(Self.identifier("core::slice::iter::Iter<T>::new") == "new")
        #expect(Self.identifier("(anonymous namespace)::crash()") == "crash")
        #expect(Self.identifier("main") == "main")
    }
}
