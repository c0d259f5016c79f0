import TestSupport
import Foundation
import Synchronization
import Testing

/// `crashsym addr2line` against GNU binutils addr2line, and `crashsym llvm-symbolizer` against the
/// toolchain's llvm-symbolizer: same input, same bytes out. Every difference the tools are allowed
/// is listed where it is tolerated, with its reason.
@Suite struct DropInAddr2lineTests {
    /// gcc C fixtures, whose DWARF binutils reads fully (it drops inlined frames on clang DWARF 5).
    /// Also a 32-bit file (8-digit `-a` addresses), an AArch64 one, and clang DWARF 4 without
    /// inlining, which binutils reads fully too.
    static let gccC = ["gcc-c-O2-dwarf5", "gcc-c-O0-dwarf4", "gcc-c-O0-dwarf2", "gcc-c-O2-dwarf5-nopie",
                       "gcc-c-O2-dwarf5-strip-debug", "gcc-c-O2-dwarf5-zlib", "aarch64-gcc-c-O2", "i386-clang-start-O2",
                       "clang-c-O0-dwarf4"]
    static let flagSets: [[String]] = [[], ["-f"], ["-f", "-i", "-C", "-a"], ["-f", "-i", "-p", "-a", "-s"],
                                       ["-i", "-p"], ["-a", "-f", "-i", "-s"], ["-fiCa"]]

    /// Lines binutils and crashsym both read: function addresses, then odd ones (empty, not hex,
    /// negative, overflowing, surrounded by spaces, outside every section).
    static func input(_ fixture: String) throws -> String {
        let addresses = try DropIn.functionAddresses(CLI.fixture(fixture)).map(DropIn.hex)
        let odd = ["", "zz", "-1", "ffffffffffffffffffff", "  0x10e0  ", "0X10E0", "0x0", "0x101b", "0xffffffffffffffff"]
        return (addresses + odd).joined(separator: "\n") + "\n"
    }

    /// binutils output without discriminators: the `.csym` tables do not keep them (gcc emits
    /// them at -O0 and -O2), so `file:12 (discriminator 3)` is compared as `file:12`.
    static func withoutDiscriminators(_ text: String) -> String {
        text.replacingOccurrences(of: #" \(discriminator [0-9]+\)"#, with: "", options: .regularExpression)
    }

    @Test("same bytes as binutils addr2line on gcc C fixtures", arguments: gccC)
    func matchesBinutils(fixture: String) throws {
        let path = CLI.fixture(fixture)
        let input = try Self.input(fixture)
        for flags in Self.flagSets {
            let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path] + flags, input: input)
            let actual = try CLI.run(["addr2line", "-e", path] + flags, input: input)
            #expect(actual.status == 0, "\(flags): \(actual.stderr)")
            let wanted = Self.withoutDiscriminators(expected.stdout)
            #expect(actual.stdout == wanted, "\(fixture) \(flags):\n\(DropIn.differences(wanted.split(separator: "\n", omittingEmptySubsequences: false), actual.stdout.split(separator: "\n", omittingEmptySubsequences: false)))")
        }
    }

    @Test func addressesOnTheCommandLineAnswerLikeStandardInput() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let addresses = try DropIn.functionAddresses(path, stride: 41).map(DropIn.hex)
        let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path, "-f", "-i", "-a"] + addresses)
        let actual = try CLI.run(["addr2line", "-e", path, "-f", "-i", "-a"] + addresses)
        #expect(actual.stdout == Self.withoutDiscriminators(expected.stdout))
        #expect(addresses.count > 5)
    }

    /// gcc C++: byte-identical except where binutils is known to answer differently, each
    /// difference accepted only when llvm-symbolizer (the project's oracle) gives our answer:
    /// - binutils names a DWARF function without a linkage name (lambdas, some templates) after
    ///   the ELF symbol, and when that symbol does not start at the function's first byte only
    ///   on the first lookup, later ones after the DWARF name (dwarf2.c caches `is_linkage`), so
    ///   its answer depends on query order; we always give the symbol for such a function (a
    ///   plain DWARF name under a mangled symbol);
    /// - binutils 2.40 resolves the file of some COMDAT functions' rows in this DWARF 5 unit to
    ///   `main.cpp` where the line table says `geometry.hpp`.
    /// `debuglink/prog` is the same program stripped, its DWARF in `prog.debug` next to it
    /// (found through `.gnu_debuglink` by all three tools).
    @Test("gcc C++ like binutils, or like the oracle where binutils errs", arguments: ["gcc-cpp-O2-dwarf5", "debuglink/prog"])
    func gccCppMatchesBinutilsOrTheOracle(fixture: String) throws {
        let path = CLI.fixture(fixture)
        let addresses = try DropIn.functionAddresses(path)
        let input = addresses.map(DropIn.hex).joined(separator: "\n") + "\n"
        let flags = ["-a", "-f", "-i"]
        let expected = Self.withoutDiscriminators(try DropIn.run(DropIn.binutilsAddr2line, ["-e", path] + flags, input: input).stdout)
        let actual = try CLI.run(["addr2line", "-e", path] + flags, input: input).stdout
        let ours = Self.blocks(actual), theirs = Self.blocks(expected)
        try #require(ours.count == addresses.count && theirs.count == addresses.count)
        var disputed: [UInt64] = []
        for (index, address) in addresses.enumerated() where ours[index] != theirs[index] {
            disputed.append(address)
        }
        // Differences are a minority, and on each the oracle sides with us.
        #expect(disputed.count * 4 < addresses.count, "\(disputed.count) of \(addresses.count) differ")
        let oracle = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=\(path)", "--no-demangle"],
                                    input: disputed.map(DropIn.hex).joined(separator: "\n") + "\n").stdout
        let answers = oracle.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        try #require(answers.count == disputed.count)
        for (address, answer) in zip(disputed, answers) {
            let index = addresses.firstIndex(of: address)!
            // llvm's answer in addr2line's shape: name, then file:line (column dropped).
            var shaped: [Substring] = []
            for (position, line) in answer.split(separator: "\n").enumerated() {
                if position % 2 == 0 { shaped.append(line); continue }
                let parts = line.split(separator: ":")
                shaped.append(parts.dropLast().joined(separator: ":")[...])
            }
            var mine = Array(ours[index].dropFirst())
            // Physical frames: llvm names them after the ELF symbol, we (as BFD) after DWARF.
            if let last = shaped.indices.last(where: { $0 % 2 == 0 }), last < mine.count { mine[last] = shaped[last] }
            #expect(mine == shaped, "\(DropIn.hex(address)): binutils \(theirs[index]), ours \(ours[index]), llvm \(shaped)")
        }
    }

    /// Splits `-a` output into one block of lines per address.
    static func blocks(_ text: String) -> [[Substring]] {
        var blocks: [[Substring]] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("0x") && line.count == 18 { blocks.append([line]) } else if !blocks.isEmpty { blocks[blocks.count - 1].append(line) }
        }
        return blocks
    }

    @Test func aCsymTableAnswersLikeItsELFFile() throws {
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let elf = CLI.fixture("gcc-c-O2-dwarf5")
        let table = try CLI.dumpTable(elf, into: output).table
        let input = try DropIn.functionAddresses(elf).map(DropIn.hex).joined(separator: "\n") + "\n"
        let fromELF = Self.blocks(try CLI.run(["addr2line", "-e", elf, "-a", "-f", "-i", "-C"], input: input).stdout)
        let fromTable = Self.blocks(try CLI.run(["addr2line", "-e", table, "-a", "-f", "-i", "-C"], input: input).stdout)
        try #require(fromELF.count == fromTable.count && !fromELF.isEmpty)
        var compared = 0
        for (left, right) in zip(fromELF, fromTable) {
            // Code without DWARF is named from the ELF file's STT_FILE symbols, which a table lacks.
            if left.contains(where: { $0.hasSuffix(":?") }) {
                #expect(right.last == "??:?")
                continue
            }
            #expect(left == right)
            compared += 1
        }
        #expect(compared > 100)
    }

    @Test func unreadableFilesFailWithAClearMessage() throws {
        let missing = try CLI.run(["addr2line", "-e", "/nonexistent/app", "0x10"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/nonexistent/app"))
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: CLI.fixture("gcc-c-O2-dwarf5")))
        var random = SplitMix64(seed: 7)
        for cut in [1, 4, 16, 63, 64, 200, 4096, bytes.count / 2, bytes.count - 1] + (0..<6).map({ _ in Int.random(in: 1..<bytes.count, using: &random) }) {
            let path = directory + "/cut-\(cut)"
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: path))
            let result = try CLI.run(["addr2line", "-e", path, "-f", "0x10e0"])
            #expect(result.status == 0 || result.status == 1, "cut at \(cut): status \(result.status)")
            if result.status == 1 { #expect(result.stderr.contains(path)) }
        }
    }

    /// Seeded random lines of hex-ish text: binutils reads each with `bfd_scan_vma` (white space,
    /// optional 0x, hex digits up to the first other character, all ones on overflow).
    @Test func randomLinesReadLikeBinutils() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        // No `+`: binutils 2.40 reads `symbol+offset` lines, whose odd cases (`1+main`) it reads in
        // ways not worth copying; the symbol forms are checked one by one below.
        let tokens = ["0x", "0X", "1", "3", "9", "a", "F", "e0", "10e0", "1390", " ", "\t", "-", "z", "g", ":",
                      "ffffffff", "0", "x", "\r", "main", "fibonacci"]
        var random = SplitMix64(seed: 42)
        var lines: [String] = []
        for _ in 0..<300 {
            var line = ""
            for _ in 0..<Int.random(in: 0...6, using: &random) { line += tokens[Int.random(in: 0..<tokens.count, using: &random)] }
            lines.append(line)
        }
        let input = lines.joined(separator: "\n") + "\n"
        let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path, "-a", "-f"], input: input)
        let actual = try CLI.run(["addr2line", "-e", path, "-a", "-f"], input: input)
        #expect(actual.status == 0)
        let wanted = Self.withoutDiscriminators(expected.stdout)
        #expect(actual.stdout == wanted, "\(DropIn.differences(wanted.split(separator: "\n"), actual.stdout.split(separator: "\n")))")
    }

    /// `symbol[+offset]` input (binutils 2.40): a line starting with no hex digit, or holding a `+`.
    @Test func symbolPlusOffsetLinesReadLikeBinutils() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let lines = ["main", "main+4", "main+0x4", "fibonacci+10", "fibonacci", "completed.0+1", "completed.0", "nosuch+4",
                     "+9a", "+ 9", "-1", "main+-1", " main", "main ", "_init+0x10000", "__abi_tag", "x9", "main-4", "+e00"]
        let input = lines.joined(separator: "\n") + "\n"
        let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path, "-a", "-f", "-i"], input: input)
        let actual = try CLI.run(["addr2line", "-e", path, "-a", "-f", "-i"], input: input)
        #expect(actual.stdout == Self.withoutDiscriminators(expected.stdout))
        #expect(actual.stdout.contains("0x00000000000010e4\nmain\n"))
    }

    @Test func runThroughALinkNamedAddr2lineItIsAddr2line() throws {
        let (directory, link) = try DropIn.link(named: "addr2line")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let input = try Self.input("gcc-c-O2-dwarf5")
        let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", path, "-f", "-i", "-p"], input: input)
        let actual = try DropIn.run(link, ["-e", path, "-f", "-i", "-p"], input: input)
        #expect(actual.status == 0)
        #expect(actual.stdout == Self.withoutDiscriminators(expected.stdout))
    }
}

@Suite struct DropInSymbolizerTests {
    static let fixtures = ["gcc-c-O2-dwarf5", "gcc-c-O2-dwarf5-strip-debug", "clang-c-O2-dwarf5", "clang-c-O2-dwarf5-gz",
                           "clang-cpp-O2-dwarf4", "gcc-cpp-O2-dwarf5", "rust-O2", "rust-O2-dwarf5-v0", "swift-O", "swift-Onone",
                           "aarch64-gcc-c-O2", "i386-clang-start-O2", "armv7-clang-start-O2", "riscv64-clang-start-O2",
                           "libgreet.so", "greet-app", "libnative-android21-aarch64.so", "debuglink/prog"]
    /// The flags sanitizer runtimes pass (old and new), then the output switches.
    static let flagSets: [[String]] = [
        [],
        ["--demangle", "--inlines", "--default-arch=x86_64"],
        ["--inlining=true", "--relative-address", "--functions=linkage", "--demangle"],
        ["--inlining=false"], ["--no-inlines", "-a"], ["--no-demangle", "-a", "-s"], ["-p", "-a"], ["--functions=none"],
        ["-Cfi", "--basenames"],
    ]

    /// Every way of naming the module on a line, in turn.
    static func input(_ path: String, _ addresses: [UInt64]) -> String {
        addresses.enumerated().map { index, address in
            let hex = DropIn.hex(address)
            switch index % 5 {
            case 0: return "CODE \(path) \(hex)"
            case 1: return "\(path) \(hex)"
            case 2: return "CODE \"\(path)\" \(hex)"
            case 3: return "CODE \"\(path):x86_64\" \(hex)"
            default: return "CODE FILE:\(path) \(hex)"
            }
        }.joined(separator: "\n") + "\n"
    }

    /// Splits LLVM-style output into answers (each a list of lines).
    static func answers(_ text: String) -> [[Substring]] {
        text.components(separatedBy: "\n\n").dropLast().map { $0.split(separator: "\n", omittingEmptySubsequences: false) }
    }

    /// Flags crashsym accepts and ignores that LLVM 21's llvm-symbolizer rejects (older sanitizer
    /// runtimes pass `--use-symbol-table=true`): left out of the reference's command line.
    static let acceptedOnlyByUs: Set<String> = ["--use-symbol-table=true", "--future-flag=1"]

    /// Whether two demangled names differ only where LLVM's Itanium demangler and the C++
    /// runtime's (`__cxa_demangle`, which crashsym uses) spell the same entity differently: lambdas
    /// (`'lambda'(auto const&)` against `{lambda(auto:1 const&)#1}`), and names LLVM 21 gives up
    /// on and prints mangled (clang's unnamed `$_4` types, `sr` expressions in `enable_if`).
    /// (With `-p` the line also holds the address and the location; those must match exactly.)
    static func demanglerStylesDiffer(_ llvmLine: Substring, _ ourLine: Substring) -> Bool {
        func parts(_ line: Substring) -> (prefix: String, name: Substring, location: Substring) {
            var name = line, location: Substring = ""
            if let at = line.range(of: " at ", options: .backwards) {
                name = line[..<at.lowerBound]
                location = line[at.lowerBound...]
            }
            var prefix = ""
            if let match = name.range(of: #"^(0x[0-9a-f]+: | \(inlined by\) )"#, options: .regularExpression) {
                prefix = String(name[match])
                name = name[match.upperBound...]
            }
            return (prefix, name, location)
        }
        let (llvmPrefix, llvm, llvmLocation) = parts(llvmLine), (ourPrefix, ours, ourLocation) = parts(ourLine)
        guard llvmPrefix == ourPrefix, llvmLocation == ourLocation else { return false }
        return (llvm.contains("'lambda") && ours.contains("{lambda(")) || (llvm.hasPrefix("_Z") && !ours.hasPrefix("_Z"))
    }

    @Test("same bytes as llvm-symbolizer", arguments: fixtures)
    func matchesLLVMSymbolizer(fixture: String) throws {
        let path = CLI.fixture(fixture)
        let addresses = try DropIn.functionAddresses(path, stride: 5)
        // Not address 0: llvm answers it from dead-code DWARF whose addresses were zeroed (rustc),
        // which the tables leave out.
        let input = Self.input(path, addresses + [0xfffffffffff])
        for flags in Self.flagSets {
            let expected = try DropIn.run(DropIn.llvmSymbolizer, flags.filter { !Self.acceptedOnlyByUs.contains($0) }, input: input)
            let actual = try CLI.run(["llvm-symbolizer"] + flags, input: input)
            #expect(actual.status == 0 && expected.status == 0)
            #expect(actual.stderr.isEmpty, "\(actual.stderr)")
            if expected.stdout == actual.stdout { continue }
            // Only demangler spelling may differ, on name lines, and only for C++.
            let theirs = Self.answers(expected.stdout), ours = Self.answers(actual.stdout)
            try #require(theirs.count == ours.count, "\(fixture) \(flags)")
            for (left, right) in zip(theirs, ours) where left != right {
                #expect(left.count == right.count && (fixture.contains("cpp") || fixture.hasPrefix("debuglink")),
                        "\(fixture) \(flags): \(left) vs \(right)")
                for (a, b) in zip(left, right) where a != b {
                    #expect(Self.demanglerStylesDiffer(a, b), "\(fixture) \(flags): llvm \(a), ours \(b)")
                }
            }
        }
    }

    /// The persistent table cache: a run with an empty cache converts and writes the module's
    /// table; a second run (or a run for a twin with the same build-id, whose table another file
    /// wrote) reads it and answers with the same bytes, in both drop-in modes.
    @Test("answers from the table cache are the bytes of a conversion", arguments: [
        ("gcc-c-O2-dwarf5", "gcc-c-O2-dwarf5"), ("clang-cpp-O2-dwarf5", "clang-cpp-O2-dwarf5-zstd"),
        ("debuglink/prog", "gcc-cpp-O2-dwarf5"), ("clang-c-O2-dwarf5-gz", "clang-c-O2-dwarf5"),
        ("gcc-c-O2-dwarf5-strip-debug", "gcc-c-O2-dwarf5"),
    ])
    func cachedAnswersAreTheBytesOfAConversion(fixture: String, twin: String) throws {
        let path = CLI.fixture(fixture)
        let addresses = try DropIn.functionAddresses(path, stride: 5)
        let symbolizerInput = Self.input(path, addresses)
        let addr2lineInput = addresses.map(DropIn.hex).joined(separator: "\n") + "\n"
        func answers(cache: String) throws -> [String] {
            let environment = ["CRASHSYM_CACHE_DIR": cache]
            let symbolizer = try CLI.run(["llvm-symbolizer"], input: symbolizerInput, environment: environment)
            let addr2line = try CLI.run(["addr2line", "-e", path, "-a", "-f", "-i", "-C"], input: addr2lineInput,
                                        environment: environment)
            #expect(symbolizer.status == 0 && addr2line.status == 0)
            return [symbolizer.stdout, addr2line.stdout]
        }
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let converted = try answers(cache: directory + "/cold")
        let buildID = try #require(try Self.buildID(of: path))
        // Written by the run that converted (stripped twins carry no DWARF: nothing to cache).
        let written = Self.hasCachedTable(directory + "/cold", buildID)
        #expect(written == !fixture.hasSuffix("strip-debug"))
        #expect(try answers(cache: directory + "/cold") == converted)
        // The twin writes a table under its own bytes' key: this fixture, other bytes, is not
        // answered from it and answers as converted.
        _ = try CLI.run(["llvm-symbolizer", "--obj=" + CLI.fixture(twin), "0x0"],
                        environment: ["CRASHSYM_CACHE_DIR": directory + "/twin"])
        #expect(Self.hasCachedTable(directory + "/twin", buildID))
        #expect(try answers(cache: directory + "/twin") == converted)
        #expect(converted[0].contains(":") && converted[1].split(separator: "\n").count > addresses.count)
    }

    /// Whether the table cache `directory` holds a table of `buildID` (`<build-id>-<identity>.c<converter
    /// version>.csym`, whatever the identity and version).
    static func hasCachedTable(_ directory: String, _ buildID: String) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.contains { $0.hasPrefix(buildID + "-") && $0.hasSuffix(".csym") }
    }

    /// The GNU build-id of `path`, as readelf prints it.
    static func buildID(of path: String) throws -> String? {
        let notes = try DropIn.run("/usr/bin/readelf", ["-n", path]).stdout
        return notes.split(separator: "\n").first { $0.contains("Build ID:") }.map { String($0.split(separator: " ").last!) }
    }

    /// DATA answers: the ELF symbol, its start and size, and where it was declared. llvm takes the
    /// declaration from DWARF variables, which the tables do not keep: there we print what llvm
    /// prints without DWARF (the STT_FILE name of a local symbol with line 0, else `??:?`).
    @Test("DATA answers like llvm-symbolizer", arguments: ["gcc-c-O2-dwarf5", "gcc-c-O2-dwarf5-strip-debug", "clang-cpp-O2-dwarf5"])
    func dataMatchesLLVMSymbolizer(fixture: String) throws {
        let path = CLI.fixture(fixture)
        let objects = try DropIn.dataObjects(path)
        try #require(!objects.isEmpty)
        var addresses: [UInt64] = [0, 0xfffffffffff]
        for (address, _) in objects { addresses += [address, address + 1] }
        let input = addresses.map { "DATA \(path) \(DropIn.hex($0))" }.joined(separator: "\n") + "\n"
        let theirs = Self.answers(try DropIn.run(DropIn.llvmSymbolizer, [], input: input).stdout)
        let ours = Self.answers(try CLI.run(["llvm-symbolizer"], input: input).stdout)
        try #require(theirs.count == addresses.count && ours.count == addresses.count)
        var exact = 0
        for (left, right) in zip(theirs, ours) {
            #expect(Array(left.prefix(2)) == Array(right.prefix(2)))
            if left == right { exact += 1; continue }
            #expect(!left[2].hasSuffix(":?") && !left[2].hasSuffix(":0"), "llvm \(left), ours \(right)")
            #expect(right[2] == "??:?" || right[2].hasSuffix(":0"))
        }
        #expect(exact * 2 > addresses.count)
        let json = try CLI.run(["llvm-symbolizer", "--output-style=JSON"], input: input).stdout
        let jsonTheirs = try DropIn.run(DropIn.llvmSymbolizer, ["--output-style=JSON"], input: input).stdout
        #expect(json == jsonTheirs)
    }

    /// Lines that are not requests, modules that cannot be read, offsets in every radix, --obj mode:
    /// same answers on stdout as llvm-symbolizer, and the same error messages on stderr.
    @Test func protocolEdgeCasesMatchLLVMSymbolizer() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let text = CLI.fixture("README.md")
        let lines = [
            "", "   ", "0x1390", "CODE", "CODE \(path) 0x9z", "CODE \(path) 5008", "CODE \(path) 011620",
            "CODE \(path) 0b1001110010000", "CODE \(path) 0x1390 trailing words", "CODE /nonexistent/module 0x10",
            "CODE /nonexistent/module 0x20", "DATA /nonexistent/module 0x10", "CODE \"\(path) 0x1390",
            "CODE \(text) 0x10", "CODE \(path) 0x10000000000000000", "CODE FILE:FILE:\(path) 0x1390", "CODE FILE:",
            "DATA \(path) 0x4048", "'\(path)' 0x1390\r",
        ]
        let input = lines.joined(separator: "\n") + "\n"
        let expected = try DropIn.run(DropIn.llvmSymbolizer, [], input: input)
        let actual = try CLI.run(["llvm-symbolizer"], input: input)
        #expect(actual.stdout == expected.stdout, "\(DropIn.differences(expected.stdout.split(separator: "\n"), actual.stdout.split(separator: "\n")))")
        func messages(_ text: String) -> [Substring] {
            text.split(separator: "\n").map { line in line.range(of: ": error: ").map { line[$0.upperBound...] } ?? line }
        }
        #expect(messages(actual.stderr) == messages(expected.stderr))

        for arguments in [["--obj=\(path)"], ["-e", path], ["--exe", path]] {
            let objectInput = "0x1390\n0x1390 0x1370\nCODE 0x1390\nDATA 0x4048\nFILE:\(path) 0x1390\n\n"
            let theirs = try DropIn.run(DropIn.llvmSymbolizer, arguments, input: objectInput)
            let ours = try CLI.run(["llvm-symbolizer"] + arguments, input: objectInput)
            #expect(ours.stdout == theirs.stdout, "\(arguments)")
        }
        let positional = ["--obj=\(path)", "0x1390", "0x1370", "0x10e0"]
        #expect(try CLI.run(["llvm-symbolizer"] + positional).stdout == DropIn.run(DropIn.llvmSymbolizer, positional).stdout)
    }

    /// Seeded random lines built from protocol tokens, and a valid line cut at every byte: the
    /// same answers as llvm-symbolizer, never a crash.
    @Test func randomAndTruncatedLinesAnswerLikeLLVMSymbolizer() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5-strip-debug")
        let tokens = ["CODE ", "DATA ", "FILE:", "\"", "'", " ", "  ", "0x", "0X", "0", "1", "7", "9", "1390", "a", "f",
                      "z", path, ":x86_64", "\t", "-", "\r", "CODE", "/nonexistent", "0b", "1010"]
        var random = SplitMix64(seed: 20261122)
        var lines: [String] = []
        for _ in 0..<400 {
            let count = Int.random(in: 1...7, using: &random)
            var line = ""
            for _ in 0..<count { line += tokens[Int.random(in: 0..<tokens.count, using: &random)] }
            // Symbol names (a line ending in letters) are looked up by llvm-symbolizer; not here.
            if let last = line.last, last.isLetter { line += " 0x1" }
            lines.append(line)
        }
        let valid = "CODE \"\(path)\" 0x10e0"
        for cut in 0...valid.count { lines.append(String(valid.prefix(cut))) }
        let input = lines.joined(separator: "\n") + "\n"
        let actual = try CLI.run(["llvm-symbolizer"], input: input)
        #expect(actual.status == 0)
        let ours = Self.answers(actual.stdout)
        try #require(ours.count == lines.count)
        // llvm-symbolizer 21 itself crashes on some sequences (a missing module `X`, later `X:x86_64`):
        // compare what it answered, then restart it after the line it died on.
        var start = 0, crashes = 0
        while start < lines.count {
            let rest = lines[start...].joined(separator: "\n") + "\n"
            let expected = try DropIn.run(DropIn.llvmSymbolizer, [], input: rest)
            let theirs = Self.answers(expected.stdout)
            for (offset, answer) in theirs.enumerated() where answer != ours[start + offset] {
                Issue.record("line \(start + offset) '\(lines[start + offset])': llvm \(answer), ours \(ours[start + offset])")
            }
            if expected.status == 0 {
                #expect(theirs.count == lines.count - start)
                break
            }
            crashes += 1
            start += theirs.count + 1
        }
        #expect(crashes < 10)
    }

    /// FRAME asks for the locals of a frame (HWASan): the tables keep no local variables, so
    /// only the answer without locals is llvm-symbolizer's; with locals llvm lists them (not done).
    @Test func frameRequestsWithoutLocalsAnswerLikeLLVMSymbolizer() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let input = "FRAME \(path) 0x99999\nFRAME \(path) 0x0\nFRAME /nonexistent 0x10\n"
        for flags in [[], ["-a"], ["--output-style=JSON"]] {
            let expected = try DropIn.run(DropIn.llvmSymbolizer, flags, input: input)
            let actual = try CLI.run(["llvm-symbolizer"] + flags, input: input)
            #expect(actual.stdout == expected.stdout, "\(flags)")
        }
        let withLocals = try CLI.run(["llvm-symbolizer"], input: "FRAME \(path) 0x10e0\n")
        #expect(withLocals.stdout == "??\n\n")
    }

    /// A regression case found by the test above: llvm-symbolizer 21 crashes (SIGSEGV) here.
    @Test func aMissingModuleAskedAgainWithAnArchitectureIsStillAnswered() throws {
        let result = try CLI.run(["llvm-symbolizer"], input: "1390 x\n1390:x86_64 x\n")
        #expect(result.status == 0)
        #expect(result.stdout == "??\n??:0:0\n\n??\n??:0:0\n\n")
        #expect(result.stderr == "llvm-symbolizer: error: '1390': No such file or directory\n")
    }

    /// JSON: the same objects, field by field, for what the tables hold; llvm's `StartFileName`,
    /// `StartLine`, inlined frames' `StartAddress` (DW_AT_decl_*, DW_AT_low_pc) and `Discriminator`
    /// are not kept in `.csym` tables and print as llvm prints them unknown (`""`, 0).
    @Test("JSON output style", arguments: ["gcc-c-O2-dwarf5", "clang-cpp-O2-dwarf4", "rust-O2"])
    func jsonMatchesLLVMSymbolizer(fixture: String) throws {
        let path = CLI.fixture(fixture)
        let addresses = try DropIn.functionAddresses(path, stride: 11) + [0xfffffffffff]
        let input = Self.input(path, addresses) + "CODE /nonexistent/module 0x10\n\n"
        let theirs = try DropIn.run(DropIn.llvmSymbolizer, ["--output-style=JSON", "--no-demangle"], input: input).stdout
        let ours = try CLI.run(["llvm-symbolizer", "--output-style=JSON", "--no-demangle"], input: input).stdout
        let left = theirs.split(separator: "\n"), right = ours.split(separator: "\n")
        try #require(left.count == right.count && left.count == addresses.count + 2)
        for (a, b) in zip(left, right) {
            let expected = try JSONSerialization.jsonObject(with: Data(a.utf8)) as! [String: Any]
            let actual = try JSONSerialization.jsonObject(with: Data(b.utf8)) as! [String: Any]
            #expect(Set(expected.keys) == Set(actual.keys))
            #expect(expected["Address"] as? String == actual["Address"] as? String)
            #expect(expected["ModuleName"] as? String == actual["ModuleName"] as? String)
            #expect((expected["Error"] as? [String: String]) == (actual["Error"] as? [String: String]))
            let frames = expected["Symbol"] as? [[String: Any]] ?? [], mine = actual["Symbol"] as? [[String: Any]] ?? []
            #expect(frames.count == mine.count, "\(a)\n\(b)")
            for (frame, ourFrame) in zip(frames, mine) {
                #expect(Set(frame.keys) == Set(ourFrame.keys))
                for key in ["FunctionName", "FileName"] { #expect(frame[key] as? String == ourFrame[key] as? String, "\(a)\n\(b)") }
                for key in ["Line", "Column"] { #expect(frame[key] as? Int == ourFrame[key] as? Int, "\(a)\n\(b)") }
            }
            // The physical frame's start is the ELF symbol's address in both.
            if let last = mine.last, let start = last["StartAddress"] as? String, !start.isEmpty {
                #expect(frames.last?["StartAddress"] as? String == start)
            }
        }
    }

    @Test func runThroughALinkNamedLLVMSymbolizerItSpeaksTheProtocol() throws {
        let (directory, link) = try DropIn.link(named: "llvm-symbolizer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let input = Self.input(path, try DropIn.functionAddresses(path, stride: 17)) + "CODE /nonexistent 0x1\n"
        let expected = try DropIn.run(DropIn.llvmSymbolizer, ["--inlines"], input: input)
        let actual = try DropIn.run(link, ["--inlines"], input: input)
        #expect(actual.status == 0)
        #expect(actual.stdout == expected.stdout)
        // Errors are prefixed with the program name as invoked, as llvm-symbolizer does.
        #expect(actual.stderr == "\(link): error: '/nonexistent': No such file or directory\n")
    }

    /// A sanitizer runtime writes one line and waits for its answer on the pipe: each answer must
    /// arrive while standard input is still open.
    @Test func eachAnswerArrivesBeforeTheNextLineIsSent() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["llvm-symbolizer", "--inlines"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        defer { try? input.fileHandleForWriting.close(); process.waitUntilExit() }
        let reader = output.fileHandleForReading
        for (address, expected) in [("0x1390", "mix\n/fixtures/src/c/checksum.h:18:11\nscramble\n/fixtures/src/c/table.c:7:51\n\n"),
                                    ("0x1000", "_init\n??:0:0\n\n")] {
            input.fileHandleForWriting.write(Data("CODE \(path) \(address)\n".utf8))
            let received = DropInReceived()
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                while !received.endsAnswer {
                    let chunk = reader.availableData
                    if chunk.isEmpty { break }
                    received.append(chunk)
                }
                done.signal()
            }
            thread.start()
            #expect(done.wait(timeout: .now() + 60) == .success, "no answer to \(address) while the pipe is open")
            #expect(received.text == expected)
        }
    }

    /// A truncated module never stops the protocol: every line still gets its answer.
    @Test func truncatedModulesAreAnsweredUnknownOrFromWhatIsLeft() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: CLI.fixture("gcc-c-O2-dwarf5")))
        var random = SplitMix64(seed: 99)
        var lines: [String] = []
        for cut in [0, 1, 52, 64, 1000, bytes.count / 3, bytes.count - 100] + (0..<8).map({ _ in Int.random(in: 1..<bytes.count, using: &random) }) {
            let path = directory + "/cut-\(cut)"
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: path))
            lines += ["CODE \(path) 0x1390", "DATA \(path) 0x4048", "CODE \(path) 0x10e0"]
        }
        let result = try CLI.run(["llvm-symbolizer"], input: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 0)
        #expect(Self.answers(result.stdout).count == lines.count)
    }

    /// An endless line is answered in pieces rather than held in memory; the next line still gets
    /// its answer.
    @Test func aHugeLineDoesNotStopTheProtocol() throws {
        let path = CLI.fixture("gcc-c-O2-dwarf5")
        let input = String(repeating: "a", count: 3 << 20) + "\nCODE \(path) 0x1390\n"
        let result = try CLI.run(["llvm-symbolizer"], input: input)
        #expect(result.status == 0)
        #expect(result.stdout.hasSuffix("\n\nmix\n/fixtures/src/c/checksum.h:18:11\nscramble\n/fixtures/src/c/table.c:7:51\n\n"))
    }

    @Test func helpAndVersionAndTheSubcommandList() throws {
        #expect(try CLI.run(["--help"]).stdout.contains("llvm-symbolizer"))
        #expect(try CLI.run(["--help"]).stdout.contains("addr2line"))
        let help = try CLI.run(["llvm-symbolizer", "--help"])
        #expect(help.status == 0 && help.stdout.contains("CODE"))
    }

    /// A statically linked Swift binary: functions of the standard library and runtime have no
    /// DWARF, and llvm-symbolizer names their file from the `STT_FILE` symbol before them, the
    /// archive member (`Swift.o:0:0`). Same files and lines, text and JSON (names are compared
    /// elsewhere: LLVM and libiberty spell some C++ templates differently).
    @Test func staticSwiftArchiveMembersAnswerLikeLLVMSymbolizer() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let program = directory + "/static-swift"
        let source = CLI.root.appendingPathComponent("Fixtures/dropin/static-swift.swift").path
        let build = try DropIn.run("/opt/swift/usr/bin/swiftc", ["-static-stdlib", "-g", "-O", "-module-cache-path",
                                                                 directory + "/cache", "-o", program, source])
        try #require(build.status == 0, "\(build.stderr)")
        let starts = try DropIn.functionAddresses(program, stride: 1 << 20)
        // Every seventh function, one byte in: a few thousand addresses.
        let addresses = starts.sorted().enumerated().filter { $0.offset % 7 == 0 }.map { DropIn.hex($0.element + 1) }
        let input = addresses.joined(separator: "\n") + "\n"
        let theirs = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=" + program], input: input).stdout
        let ours = try CLI.run(["llvm-symbolizer", "--obj=" + program], input: input).stdout
        let locations = { (text: String) in Self.answers(text).map { $0.count > 1 ? $0[1] : "" } }
        let expected = locations(theirs)
        try #require(expected.count == addresses.count)
        #expect(locations(ours) == expected)
        #expect(expected.filter { $0 == "Swift.o:0:0" }.count > 100)

        func files(_ json: String) throws -> [[String]] {
            try json.split(separator: "\n").map { line in
                let objects = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return (objects["Symbol"] as? [[String: Any]] ?? []).map { "\($0["FileName"] ?? "")|\($0["Line"] ?? "")" }
            }
        }
        let jsonTheirs = try DropIn.run(DropIn.llvmSymbolizer, ["--obj=" + program, "--output-style=JSON"], input: input).stdout
        let jsonOurs = try CLI.run(["llvm-symbolizer", "--obj=" + program, "--output-style=JSON"], input: input).stdout
        #expect(try files(jsonOurs) == (try files(jsonTheirs)))
    }
}

/// The key end-to-end test: an AddressSanitizer report symbolized by the real llvm-symbolizer and
/// by crashsym through a link named llvm-symbolizer must be identical (ASLR off, so both runs
/// have the same addresses; the pid is masked).
@Suite struct DropInSanitizerTests {
    static let source = CLI.root.appendingPathComponent("Fixtures/dropin/use-after-free.c").path

    /// Builds `source` with AddressSanitizer and returns its report with the toolchain's
    /// llvm-symbolizer and with crashsym behind a link named llvm-symbolizer.
    static func reports(of source: String) throws -> (expected: String, actual: String) {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let program = directory + "/program"
        let compiler = source.hasSuffix(".cpp") ? DropIn.clangxx : DropIn.clang
        let build = try DropIn.run(compiler, ["-fsanitize=address", "-fuse-ld=lld", "-g", "-O1", "-Wl,--build-id=sha1",
                                                  "-o", program, source])
        try #require(build.status == 0, "\(build.stderr)")
        let (linkDirectory, link) = try DropIn.link(named: "llvm-symbolizer")
        defer { try? FileManager.default.removeItem(atPath: linkDirectory) }

        func report(symbolizer: String) throws -> String {
            let run = try DropIn.run("/usr/bin/setarch", ["-R", program],
                                     environment: ["ASAN_SYMBOLIZER_PATH": symbolizer, "ASAN_OPTIONS": "detect_leaks=0"])
            #expect(run.status != 0)
            // The pid differs between runs, and so do the frame and stack pointers of the faulting
            // frame: the environment (the symbolizer's path) sits on the stack.
            return run.stderr.replacingOccurrences(of: #"==[0-9]+=="#, with: "==PID==", options: .regularExpression)
                .replacingOccurrences(of: #"bp 0x[0-9a-f]+ sp 0x[0-9a-f]+"#, with: "bp BP sp SP", options: .regularExpression)
        }
        return (try report(symbolizer: DropIn.llvmSymbolizer), try report(symbolizer: link))
    }

    /// C++: templates, a lambda behind std::function, operator new; LLVM's demangler spelling.
    @Test func asanCppReportIsIdenticalWithCrashsymAsItsSymbolizer() throws {
        let source = CLI.root.appendingPathComponent("Fixtures/dropin/heap-overflow.cpp").path
        let (expected, actual) = try Self.reports(of: source)
        #expect(expected.contains("heap-buffer-overflow"))
        #expect(expected.contains(" in app::run(int) \(source):19:"))
        #expect(expected.contains("std::map<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>>, int"))
        #expect(actual == expected, "\(DropIn.differences(expected.split(separator: "\n"), actual.split(separator: "\n")))")
    }

    /// A global overflow: the runtime asks DATA for the global. llvm-symbolizer answers its
    /// declaration from DWARF variables, which crashsym's tables do not keep (not done yet): the
    /// reports may differ on that one line only, where we give the file from the symbol table.
    @Test func asanGlobalOverflowReportDiffersOnlyInTheDeclarationLine() throws {
        let source = CLI.root.appendingPathComponent("Fixtures/dropin/global-buffer-overflow.c").path
        let (expected, actual) = try Self.reports(of: source)
        #expect(expected.contains("global-buffer-overflow"))
        #expect(expected.contains(" in read_at \(source):8:"))
        let left = expected.split(separator: "\n"), right = actual.split(separator: "\n")
        try #require(left.count == right.count)
        var differing = 0
        for (a, b) in zip(left, right) where a != b {
            differing += 1
            #expect(a.contains("global variable 'table' defined in '\(source):5'"), "\(a)")
            // The STT_FILE symbol names the source as the compiler was given it; no line.
            #expect(b.contains("global variable 'table' defined in '\(source)' ("), "\(b)")
        }
        #expect(differing == 1)
    }

    @Test func asanReportIsIdenticalWithCrashsymAsItsSymbolizer() throws {
        let (expected, actual) = try Self.reports(of: Self.source)
        // The reference report is really symbolized: inlined frames, file:line:column, libc.
        #expect(expected.contains("heap-use-after-free"))
        #expect(expected.contains(" in read_id \(Self.source):25:"))
        #expect(expected.contains(" in process \(Self.source):31:"))
        #expect(expected.contains(" in release \(Self.source):21:"))
        #expect(expected.contains(" in make_record \(Self.source):14:"))
        #expect(actual == expected, "\(DropIn.differences(expected.split(separator: "\n"), actual.split(separator: "\n")))")
    }
}

/// Bytes read on another thread.
final class DropInReceived: Sendable {
    private let bytes = Mutex(Data())
    func append(_ data: Data) { bytes.withLock { $0.append(data) } }
    var endsAnswer: Bool { bytes.withLock { $0.count >= 2 && $0.suffix(2) == Data("\n\n".utf8) } }
    var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
}
