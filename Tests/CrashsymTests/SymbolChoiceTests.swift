import Foundation
import Testing
import TestSupport

/// Issue 21 items 1 and 2 on the fixtures of `Fixtures/symbol-choice` (built by its build.sh):
/// which of several names at one address names the code, and file:line for line-tables-only code
/// in the addr2line drop-in. Oracles: binutils addr2line, elfutils eu-addr2line, llvm-symbolizer.
@Suite struct SymbolChoiceTests {
    static func fixture(_ name: String) -> String { CLI.root.appendingPathComponent("Fixtures/symbol-choice/" + name).path }

    /// The address of `name` in `file`'s symbol table.
    static func address(of name: String, in file: String) throws -> String {
        let listing = try DropIn.run("/usr/bin/nm", [file]).stdout
        let line = try #require(listing.split(separator: "\n").first { $0.hasSuffix(" " + name) })
        return "0x" + String(UInt64(line.split(separator: " ")[0], radix: 16)!, radix: 16)
    }

    /// The function name `crashsym lookup` prints for `address`.
    static func lookupName(_ file: String, _ address: String) throws -> String {
        let result = try CLI.run(["lookup", file, address])
        let frame = try #require(result.stdout.split(separator: "\n").last)
        return String(frame.trimmingCharacters(in: .whitespaces).split(separator: " ")[0])
    }

    /// The function name `crashsym lookup --format json` gives for `address` (its physical frame).
    static func lookupJSONName(_ file: String, _ address: String) throws -> String {
        let result = try CLI.run(["lookup", file, address, "--format", "json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let frames = try #require(object["frames"] as? [[String: Any]])
        return try #require(frames.last?["function"] as? String)
    }

    /// `gcc2_compiled.` (a zero-size local label) and three aliases sit on foo's first byte: the
    /// label, which reaches past foo to the end of its section, no longer names foo (it did, where
    /// binutils, elfutils and llvm-symbolizer name a function). With DWARF the subprogram names
    /// foo, as binutils and elfutils do; without, the symbol rule names the one llvm-symbolizer
    /// names.
    @Test func labelDoesNotNameTheFunction() throws {
        let withDWARF = Self.fixture("aliases-i386"), withoutDWARF = Self.fixture("aliases-i386-nodwarf")
        let foo = try Self.address(of: "foo", in: withDWARF)
        #expect(try Self.address(of: "gcc2_compiled.", in: withDWARF) == foo)
        let binutils = try DropIn.run(DropIn.binutilsAddr2line, ["-f", "-e", withDWARF, foo]).stdout
        let elfutils = try DropIn.run(DropIn.elfutilsAddr2line, ["-f", "-e", withDWARF, foo]).stdout
        #expect(binutils.hasPrefix("foo\n") && elfutils.hasPrefix("foo\n"))
        #expect(try Self.lookupName(withDWARF, foo) == "foo")
        let llvm = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=" + withoutDWARF, foo]).stdout
        let ours = try Self.lookupName(withoutDWARF, foo)
        #expect(ours != "gcc2_compiled.")
        #expect(llvm.hasPrefix(ours + "\n"), "\(ours) vs \(llvm)")
        // The label's code after foo (`after`) keeps its own name.
        let after = try Self.address(of: "after", in: withDWARF)
        #expect(try Self.lookupName(withDWARF, after) == "after")
        #expect(try Self.lookupName(withoutDWARF, after) == "after")
        let ours2line = try CLI.run(["addr2line", "-f", "-e", withDWARF, foo]).stdout
        #expect(ours2line == binutils)
    }

    /// DWARF subprogram first: at baz's first byte sit baz (a local function, the DWARF
    /// subprogram's name), a global and a weak alias listed after it and a global untyped label.
    /// The symbol rule alone picks an alias (as llvm-symbolizer does: `baz_weak`); the DWARF
    /// names baz, as binutils and elfutils do. `lookup` (text and JSON) and `symbolicate` name
    /// baz; the `addr2line` drop-in prints binutils' answer and the `llvm-symbolizer` drop-in
    /// llvm-symbolizer's, each peer run on the same binary.
    @Test(arguments: ["baz", "foo"])
    func dwarfSubprogramNamesOneOfTheSymbols(function: String) throws {
        let path = Self.fixture("aliases-i386")
        let entry = try Self.address(of: function, in: path)
        let inside = "0x" + String(UInt64(entry.dropFirst(2), radix: 16)! + 3, radix: 16)
        // The fixture is what it claims: several symbols there, the DWARF names a local one that
        // the symbol rule (and llvm-symbolizer) does not pick.
        let aliases = try DropIn.run("/usr/bin/nm", [path]).stdout.split(separator: "\n")
            .filter { $0.hasPrefix(String(repeating: "0", count: 8 - (entry.count - 2)) + entry.dropFirst(2) + " ") }
        #expect(aliases.count >= 4, "\(aliases)")
        for address in [entry, inside] {
            let binutils = try DropIn.run(DropIn.binutilsAddr2line, ["-f", "-e", path, address]).stdout
            let elfutils = try DropIn.run(DropIn.elfutilsAddr2line, ["-f", "-e", path, address]).stdout
            #expect(binutils.hasPrefix(function + "\n") && elfutils.hasPrefix(function + "\n"), "\(binutils) \(elfutils)")
            let llvm = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=" + path, address]).stdout
            #expect(!llvm.hasPrefix(function + "\n"), "llvm-symbolizer picks an alias: \(llvm)")
            #expect(try Self.lookupName(path, address) == function)
            #expect(try Self.lookupJSONName(path, address) == function)
            #expect(try CLI.run(["addr2line", "-f", "-e", path, address]).stdout == binutils)
            #expect(try CLI.run(["llvm-symbolizer", "--obj=" + path, address]).stdout == llvm)
        }
        // symbolicate, from a glibc backtrace_symbols line of the same binary (the table it
        // converts is the one the server would store).
        let scratch = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try "\(path)(+\(inside))[0x5655\(inside.dropFirst(2))]\n".write(toFile: scratch + "/report.txt", atomically: true, encoding: .utf8)
        let report = try CLI.run(["symbolicate", scratch + "/report.txt", "--symbols", path, "--format", "json",
                                  "--no-module-paths", "--no-cache"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any], "\(report.stdout)\(report.stderr)")
        let stacks = try #require(json["stacks"] as? [[String: Any]])
        let frames = try #require(stacks.first?["frames"] as? [[String: Any]])
        let symbolicated = try #require(frames.first?["symbolized"] as? [[String: Any]], "\(frames)")
        #expect(symbolicated.last?["function"] as? String == function, "\(report.stdout)")
    }

    /// The drop-ins answer as their peers do on this file, at every function and in between.
    @Test(arguments: ["aliases-i386", "aliases-i386-nodwarf"])
    func dropInsMatchTheirPeers(file: String) throws {
        let path = Self.fixture(file)
        let addresses = try ["foo", "after", "baz", "bar", "main"].map { try Self.address(of: $0, in: path) }
        let input = addresses.joined(separator: "\n") + "\n"
        for flags in [["-f"], ["-f", "-i", "-a"], ["-f", "-p", "-C"]] {
            let binutils = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path] + flags, input: input)
            let ours = try CLI.run(["addr2line", "-e", path] + flags, input: input)
            #expect(ours.stdout == binutils.stdout, "\(file) \(flags)")
        }
        let llvm = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=" + path], input: input)
        let ours = try CLI.run(["llvm-symbolizer", "--obj=" + path], input: input)
        #expect(ours.stdout == llvm.stdout, "\(file)")
    }

    /// clang -gline-tables-only: no DWARF functions, but line rows. The addr2line drop-in prints
    /// the symbol's name with the row's file:line as binutils does, the same file:line that
    /// `lookup` and the llvm-symbolizer drop-in read from the same chain.
    @Test func lineTablesOnly() throws {
        let path = Self.fixture("line-tables")
        let addresses = try ["square", "main"].map { try Self.address(of: $0, in: path) }
        let input = addresses.joined(separator: "\n") + "\n"
        for flags in [[], ["-f"], ["-f", "-i", "-a"], ["-f", "-p", "-s"]] {
            let binutils = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path] + flags, input: input)
            let ours = try CLI.run(["addr2line", "-e", path] + flags, input: input)
            #expect(ours.stdout == binutils.stdout, "\(flags)")
        }
        let plain = try CLI.run(["addr2line", "-f", "-e", path, addresses[0]]).stdout
        #expect(plain == "square\n/fixtures/line-tables.c:5\n")
        let llvm = try CLI.run(["llvm-symbolizer", "--obj=" + path, addresses[0]]).stdout
        #expect(llvm.hasPrefix("square\n/fixtures/line-tables.c:5:"))
        let lookup = try CLI.run(["lookup", path, addresses[0]]).stdout
        #expect(lookup.contains("square  /fixtures/line-tables.c:5"))
    }
}

/// Issue 21 item 3: a stripped binary whose debug tree mirrors only the end of its directory
/// (`dbg/bin/app.debug` for `…/x/bindir/bin/app`) is found under `--debug-dir dbg`, deepest
/// trailing part first, and a file of the right name but another build (`dbg/bindir/bin/`, tried
/// first) is refused by its build-id.
@Suite struct DebugDirectoryTests {
    static let tree = SymbolChoiceTests.fixture("debugtree")

    @Test func trailingPartOfTheBinaryDirectory() throws {
        let binary = Self.tree + "/x/bindir/bin/app"
        let square = try SymbolChoiceTests.address(of: "square", in: Self.tree + "/dbg/bin/app.debug")
        let found = try CLI.run(["lookup", binary, square, "--debug-dir", Self.tree + "/dbg"])
        #expect(found.stdout.contains("square  /fixtures/line-tables.c:5"), "\(found.stdout)\(found.stderr)")
        let dropIn = try CLI.run(["llvm-symbolizer", "--obj=" + binary, "--debug-file-directory=" + Self.tree + "/dbg", square])
        #expect(dropIn.stdout.hasPrefix("square\n/fixtures/line-tables.c:5:"), "\(dropIn.stdout)")
        // Without the debug directory nothing gives file:line.
        let alone = try CLI.run(["lookup", binary, square])
        #expect(!alone.stdout.contains("line-tables.c"))
    }

    /// Only the decoy (another build's debug file under the same name) is there: refused.
    @Test func decoyIsRefused() throws {
        let scratch = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/x/bindir/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch + "/dbg/bindir/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.tree + "/x/bindir/bin/app", toPath: scratch + "/x/bindir/bin/app")
        try FileManager.default.copyItem(atPath: Self.tree + "/dbg/bindir/bin/app.debug", toPath: scratch + "/dbg/bindir/bin/app.debug")
        let square = try SymbolChoiceTests.address(of: "square", in: Self.tree + "/dbg/bin/app.debug")
        let result = try CLI.run(["lookup", scratch + "/x/bindir/bin/app", square, "--debug-dir", scratch + "/dbg"])
        #expect(!result.stdout.contains("line-tables.c"), "\(result.stdout)")
        #expect(!result.stdout.contains("decoy"))
    }
}
