import TestSupport
import SymBytes
import SymDWARF
import SymTable
import Testing

/// The fast DWARF reader against llvm-dwarfdump-14 on real binaries, across threads, and on
/// hostile input.
@Suite struct DWARFReaderTests {
    /// Extracts a model from `sections`.
    static func extract(_ sections: DWARFSections, threads: Int = 1) throws(FormatError) -> SymbolModel {
        var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: sections.machine, is64Bit: true,
                                                          name: "test"))
        try DWARFReader.extract(sections, into: &builder, threads: threads, minimumSplitBytes: 1 << 20)
        return builder.model
    }

    /// The path of a model file, joined back from its directory and name.
    static func path(_ model: SymbolModel, _ file: UInt32) -> String {
        guard file != 0 else { return "" }
        let record = model.files[Int(file)]
        let name = model.strings[Int(record.name)]
        guard record.directory != 0 else { return name }
        let directory = model.strings[Int(record.directory)]
        return directory == "/" ? "/" + name : directory + "/" + name
    }

    /// Expects `model` to hold exactly the scopes and rows llvm-dwarfdump shows for the file.
    static func expectAgreement(_ model: SymbolModel, _ oracle: DWARFReaderOracle,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(model.scopes.count == oracle.scopes.count, "scope count", sourceLocation: sourceLocation)
        var mismatches = 0
        for (index, (scope, expected)) in zip(model.scopes, oracle.scopes).enumerated() {
            let ranges = Array(model.ranges[scope.rangeIndices])
            let parent = scope.parent == Scope.noParent ? -1 : Int(scope.parent)
            let callFile = path(model, scope.callFile)
            let callFileMatches = expected.callFiles.isEmpty ? scope.callFile == 0 : expected.callFiles.contains(callFile)
            if model.strings[Int(scope.name)] != expected.name || parent != expected.parent || ranges != expected.ranges
                || !callFileMatches || scope.callLine != expected.callLine || scope.callColumn != expected.callColumn {
                mismatches += 1
                if mismatches <= 5 {
                    Issue.record("""
                        scope \(index): reader \(model.strings[Int(scope.name)]) parent \(parent) \
                        ranges \(ranges.map { "[\(DWARFReaderOracle.hex($0.start)), \(DWARFReaderOracle.hex($0.end)))" }) call \(callFile):\(scope.callLine):\(scope.callColumn)
                        expected \(expected)
                        """, sourceLocation: sourceLocation)
                }
            }
        }
        #expect(mismatches == 0, "\(mismatches) scopes differ", sourceLocation: sourceLocation)
        #expect(model.lines.count == oracle.rows.count, "row count", sourceLocation: sourceLocation)
        mismatches = 0
        for (index, (row, expected)) in zip(model.lines, oracle.rows).enumerated() {
            let actual = DWARFReaderOracle.Row(address: row.address, path: path(model, row.file), line: row.line,
                                               column: row.column, isEndSequence: row.isEndSequence)
            if actual != expected {
                mismatches += 1
                if mismatches <= 5 {
                    Issue.record("row \(index): reader \(actual), expected \(expected)", sourceLocation: sourceLocation)
                }
            }
        }
        #expect(mismatches == 0, "\(mismatches) rows differ", sourceLocation: sourceLocation)
    }

    // MARK: Differential tests

    @Test("agrees with llvm-dwarfdump", arguments: DWARFReaderFixtures.builds)
    func agreesWithLLVMDwarfdump(_ build: DWARFReaderFixtures.Build) throws {
        let path = try DWARFReaderFixtures.compile(build)
        defer { _ = try? DWARFReaderShell.run("rm -rf \(DWARFReaderShell.quote(String(path[..<path.lastIndex(of: "/")!])))") }
        let oracle = try DWARFReaderOracle.load(path)
        // The comparison means something only if the compiler emitted what the build is for.
        #expect(oracle.scopes.count >= 8)
        #expect(oracle.rows.count >= 40)
        if build.flags.contains("-O2") {
            #expect(oracle.scopes.contains { $0.parent >= 0 }, "an optimised build has inlined calls")
        }
        let model = try Self.extract(try DWARFReaderELF.sections(of: path))
        Self.expectAgreement(model, oracle)
    }

    /// Targets with other byte orders, address sizes and line programs (RISC-V's linker relaxation
    /// makes clang use `DW_LNS_fixed_advance_pc`).
    static let crossTargets = ["s390x-linux-gnu", "powerpc64-linux-gnu", "mips-linux-gnu", "i386-linux-gnu",
                               "armv7-linux-gnueabihf", "riscv64-linux-gnu", "aarch64-linux-gnu"]

    @Test("agrees with llvm-dwarfdump on other architectures", arguments: crossTargets, ["-gdwarf-4", "-gdwarf-5"])
    func agreesOnOtherArchitectures(_ target: String, _ version: String) throws {
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-\(target)")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        try DWARFReaderShell.write(Self.tinySource, to: directory + "/tiny.c")
        // No C library for these targets: link the object alone, entering at `compute`.
        try DWARFReaderShell.run("cd \(directory) && clang --target=\(target) \(version) -O2 -c tiny.c "
            + "&& ld.lld -e compute --build-id tiny.o -o tiny")
        let path = directory + "/tiny"
        let oracle = try DWARFReaderOracle.load(path)
        #expect(oracle.scopes.contains { $0.parent >= 0 })
        let sections = try DWARFReaderELF.sections(of: path)
        let bigEndian = ["s390x", "powerpc64-", "mips-"].contains { target.hasPrefix($0) }
        #expect(sections.isLittleEndian == !bigEndian)
        Self.expectAgreement(try Self.extract(sections), oracle)
    }

    @Test("agrees with llvm-dwarfdump on a Swift executable (skeleton units for clang modules)",
          arguments: ["-Onone", "-O"])
    func agreesOnSwift(_ optimisation: String) throws {
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-swift")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        try DWARFReaderShell.write("""
            import Glibc
            struct Accumulator {
                var total = 0
                @inline(__always) mutating func add(_ x: Int) { total &+= x &* x }
            }
            @inline(never) func compute(_ n: Int) -> Int {
                var accumulator = Accumulator()
                for i in 0..<n { accumulator.add(i) }
                return accumulator.total
            }
            print(compute(Int(getpid() % 7)))

            """, to: directory + "/main.swift")
        try DWARFReaderShell.run("cd \(directory) && swiftc -g \(optimisation) main.swift -o main -Xlinker --build-id=sha1")
        let path = directory + "/main"
        let dump = String(decoding: try DWARFReaderShell.run("llvm-dwarfdump-14 --debug-info \(path)"), as: UTF8.self)
        try #require(dump.contains("DW_AT_GNU_dwo_name"), "swiftc emitted a skeleton unit for a clang module")
        let oracle = try DWARFReaderOracle.load(path)
        #expect(oracle.scopes.count >= 3)
        Self.expectAgreement(try Self.extract(try DWARFReaderELF.sections(of: path)), oracle)
    }

    @Test("agrees with llvm-dwarfdump after dwz (partial units; alternate-file forms read as absent)",
          arguments: ["-gdwarf-4", "-gdwarf-5", "-gdwarf-4 multifile"])
    func agreesAfterDWZ(_ variant: String) throws {
        try #require(DWARFReaderShell.exists("/usr/bin/dwz"), "dwz is installed (apt-get install dwz)")
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-dwz")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        for (name, text) in DWARFReaderFixtures.cplusplusSources {
            try DWARFReaderShell.write(text, to: directory + "/" + name)
        }
        let flags = variant.split(separator: " ")[0]
        try DWARFReaderShell.run("cd \(directory) && g++ \(flags) -O2 -Wl,--build-id -o first main.cpp shapes.cpp "
            + "&& cp first second")
        if variant.hasSuffix("multifile") {
            // Common DIEs and strings move to common.debug, referenced by DW_FORM_GNU_ref_alt/strp_alt.
            try DWARFReaderShell.run("cd \(directory) && dwz -m common.debug first second")
        } else {
            try DWARFReaderShell.run("cd \(directory) && dwz first")
        }
        let path = directory + "/first"
        let dump = String(decoding: try DWARFReaderShell.run("llvm-dwarfdump-14 --debug-info -v \(path)"), as: UTF8.self)
        try #require(dump.contains("DW_TAG_partial_unit") || dump.contains("DW_FORM_GNU_strp_alt"), "dwz rewrote the DWARF")
        let oracle = try DWARFReaderOracle.load(path)
        #expect(oracle.scopes.count >= 8)
        Self.expectAgreement(try Self.extract(try DWARFReaderELF.sections(of: path)), oracle)
    }

    @Test("agrees with llvm-dwarfdump on python3.11d", .timeLimit(.minutes(5)))
    func agreesOnPython() throws {
        let path = "/usr/bin/python3.11d"
        let oracle = try DWARFReaderOracle.load(path)
        #expect(oracle.scopes.count > 10000)
        let model = try Self.extract(try DWARFReaderELF.sections(of: path), threads: 2)
        Self.expectAgreement(model, oracle)
    }

    @Test("agrees with llvm-dwarfdump on libc's separate debug file", .timeLimit(.minutes(5)))
    func agreesOnLibcDebugFile() throws {
        let libc = "/lib/x86_64-linux-gnu/libc.so.6"
        let note = String(decoding: try DWARFReaderShell.run("readelf -n \(libc) | awk '/Build ID/ { print $3 }'"),
                          as: UTF8.self).filter { $0.isHexDigit }
        try #require(note.count == 40, "libc.so.6 has a build-id")
        let debugFile = "/usr/lib/debug/.build-id/\(note.prefix(2))/\(note.dropFirst(2)).debug"
        try #require(DWARFReaderShell.exists(debugFile), "libc6-dbg is installed (scripts/deps test)")
        // Debian compresses debug sections; the test loader reads uncompressed ones only.
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-libc")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        let copy = directory + "/libc.debug"
        try DWARFReaderShell.run("objcopy --decompress-debug-sections \(debugFile) \(copy)")
        let oracle = try DWARFReaderOracle.load(copy)
        #expect(oracle.scopes.count > 1000)
        let model = try Self.extract(try DWARFReaderELF.sections(of: copy), threads: 2)
        Self.expectAgreement(model, oracle)
    }

    @Test("the model is identical whatever the thread count", .timeLimit(.minutes(5)))
    func threadCountDoesNotChangeTheModel() throws {
        let sections = try DWARFReaderELF.sections(of: "/usr/bin/python3.11d")
        let reference = try Self.extract(sections, threads: 1)
        #expect(reference.scopes.count > 10000)
        for threads in [2, 3, 8] {
            let model = try Self.extract(sections, threads: threads)
            #expect(model.strings == reference.strings, "strings with \(threads) threads")
            #expect(model.files == reference.files, "files with \(threads) threads")
            #expect(model.scopes == reference.scopes, "scopes with \(threads) threads")
            #expect(model.ranges == reference.ranges, "ranges with \(threads) threads")
            #expect(model.lines == reference.lines, "lines with \(threads) threads")
        }
    }

    @Test("skeleton units of split DWARF are skipped, not followed")
    func skeletonUnitsAreSkipped() throws {
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-split")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        for (name, text) in DWARFReaderFixtures.cSources { try DWARFReaderShell.write(text, to: directory + "/" + name) }
        try DWARFReaderShell.run("cd \(directory) && gcc -gdwarf-5 -gsplit-dwarf -O2 -Wl,--build-id -o split main.c other.c")
        let dump = String(decoding: try DWARFReaderShell.run("llvm-dwarfdump-14 --debug-info \(directory)/split"),
                          as: UTF8.self)
        try #require(dump.contains("DW_UT_skeleton"), "gcc emitted skeleton units")
        let model = try Self.extract(try DWARFReaderELF.sections(of: directory + "/split"))
        // Everything the skeletons describe lives in the .dwo files, which are never opened.
        #expect(model.scopes.isEmpty)
        #expect(model.lines.isEmpty)
    }

    @Test("prints extraction time on python3.11d (information only)", .timeLimit(.minutes(5)))
    func printsTiming() throws {
        let sections = try DWARFReaderELF.sections(of: "/usr/bin/python3.11d")
        for threads in [1, 2] {
            var best = Double.infinity
            var model: SymbolModel?
            for _ in 0..<5 {
                let start = DWARFReaderShell.now()
                model = try Self.extract(sections, threads: threads)
                best = min(best, DWARFReaderShell.now() - start)
            }
            let milliseconds = Int(best * 1000)
            print("DWARFReader python3.11d threads \(threads): \(milliseconds) ms, \(model!.scopes.count) scopes, "
                  + "\(model!.lines.count) rows")
        }
    }
}

// MARK: - Hostile input

extension DWARFReaderTests {
    /// Builds whose sections are mutated: DWARF 4 and 5, both producers, with ranges, range lists,
    /// string and address indices, inline calls and a line table each.
    static let hostileBuilds: [DWARFReaderFixtures.Build] = [
        .init(name: "tiny-gcc-dwarf5", compiler: "gcc", flags: "-gdwarf-5 -O2", cplusplus: false),
        .init(name: "tiny-gcc-dwarf4", compiler: "gcc", flags: "-gdwarf-4 -O2", cplusplus: false),
        .init(name: "tiny-clang-dwarf5", compiler: "clang", flags: "-gdwarf-5 -O2", cplusplus: false),
        .init(name: "tiny-clang-dwarf4-64", compiler: "clang", flags: "-gdwarf-4 -gdwarf64 -O2", cplusplus: false),
    ]

    /// A one-file program with no headers, so its sections are small enough to cut at every byte.
    static let tinySource = """
        static inline int square(int x) { return x * x; }
        static inline int cube(int x) { return square(x) * x; }
        __attribute__((cold, noinline)) void fail(void) { __builtin_trap(); }
        int compute(int n) {
            int total = 0;
            for (int i = 0; i < n; i++) {
                if (__builtin_expect(i > 1000, 0)) fail();
                total += cube(i);
            }
            return total;
        }
        int main(int argc, char **argv) { (void)argv; return compute(argc); }

        """

    /// The DWARF sections of the tiny program built with `build`.
    static func tinySections(_ build: DWARFReaderFixtures.Build) throws -> [String: [UInt8]] {
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-\(build.name)")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        try DWARFReaderShell.write(tinySource, to: directory + "/tiny.c")
        try DWARFReaderShell.run("cd \(directory) && \(build.compiler) \(build.flags) -Wl,--build-id -o tiny tiny.c")
        return try DWARFReaderELF.sectionBytes(of: directory + "/tiny").sections
    }

    /// The outcome of extracting from byte arrays: a model or the error.
    static func outcome(_ sections: [String: [UInt8]], threads: Int = 1) -> Result<SymbolModel, FormatError> {
        DWARFReaderELF.withSections(sections) { set in
            do throws(FormatError) {
                return .success(try extract(set, threads: threads))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Offsets in `.debug_info` where a unit starts or the section ends.
    static func unitBoundaries(_ info: [UInt8]) -> Set<Int> {
        var boundaries: Set<Int> = [0]
        var offset = 0
        while offset + 4 <= info.count {
            var length = Int(info[offset]) | Int(info[offset + 1]) << 8 | Int(info[offset + 2]) << 16 | Int(info[offset + 3]) << 24
            var header = 4
            if length == 0xffff_ffff {
                length = (0..<8).reduce(0) { $0 | Int(info[offset + 4 + $1]) << (8 * $1) }
                header = 12
            }
            offset += header + length
            boundaries.insert(offset)
        }
        return boundaries
    }

    @Test("truncating any section at any byte throws or yields a model, never traps",
          .timeLimit(.minutes(5)), arguments: hostileBuilds)
    func truncationAtEveryByte(_ build: DWARFReaderFixtures.Build) throws {
        let sections = try Self.tinySections(build)
        let baseline = try Self.outcome(sections).get()
        try #require(!baseline.scopes.isEmpty && !baseline.lines.isEmpty)
        var cases = 0
        for name in sections.keys.sorted() {
            let bytes = sections[name]!
            let boundaries = name == ".debug_info" ? Self.unitBoundaries(bytes) : []
            for cut in 0..<bytes.count {
                var copy = sections
                copy[name] = Array(bytes[..<cut])
                let result = Self.outcome(copy)
                cases += 1
                if name == ".debug_info" && !boundaries.contains(cut) {
                    // A unit's length says more bytes follow than there are.
                    #expect(throws: FormatError.self, "\(name) cut at \(cut)") { try result.get() }
                }
                // An empty section is an absent one; any other cut leaves a table shorter than it says.
                if name == ".debug_line", cut > 0, case .success = result {
                    Issue.record("a truncated line table was accepted (cut at \(cut))")
                }
            }
        }
        #expect(cases > 1000)
    }

    @Test("random bit flips and overwrites throw or yield a model, never trap or hang",
          .timeLimit(.minutes(5)), arguments: hostileBuilds)
    func randomCorruption(_ build: DWARFReaderFixtures.Build) throws {
        let sections = try Self.tinySections(build)
        let names = sections.keys.sorted().filter { !sections[$0]!.isEmpty }
        var failures = 0
        var successes = 0
        for seed in 0..<3000 {
            var random = SplitMix64(seed: UInt64(seed))
            var copy = sections
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let name = names.randomElement(using: &random)!
                var bytes = copy[name]!
                let offset = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    bytes[offset] ^= 1 << UInt8.random(in: 0..<8, using: &random)
                case 1:
                    bytes[offset] = UInt8.random(in: 0...255, using: &random)
                case 2:
                    // Extreme 32-bit values where lengths, offsets and counts live.
                    let value = [UInt32.max, 0x7fff_ffff, 0x8000_0000, 0xffff_fff0, 0].randomElement(using: &random)!
                    for index in 0..<4 where offset + index < bytes.count {
                        bytes[offset + index] = UInt8(truncatingIfNeeded: value >> UInt32(8 * index))
                    }
                default:
                    // A run of LEB128 continuation bytes.
                    for index in offset..<min(bytes.count, offset + 12) { bytes[index] = 0xff }
                }
                copy[name] = bytes
            }
            switch Self.outcome(copy, threads: seed % 2 + 1) {
            case .success: successes += 1
            case .failure: failures += 1
            }
        }
        #expect(failures > 0)
        #expect(failures + successes == 3000)
    }

    @Test("corrupt input gives the same outcome with one thread and with two", .timeLimit(.minutes(5)))
    func corruptionOutcomeDoesNotDependOnThreads() throws {
        let sections = try DWARFReaderELF.sectionBytes(of: "/usr/bin/python3.11d").sections
        var failures = 0
        for seed in 0..<6 {
            var random = SplitMix64(seed: UInt64(seed))
            var copy = sections
            // Damage the second half of the DIEs or the line programs (what the second thread reads):
            // a few changed bytes, or a run of 0xff that no DIE or opcode sequence survives.
            let name = seed % 2 == 0 ? ".debug_info" : ".debug_line"
            var bytes = copy[name]!
            let offset = Int.random(in: (bytes.count / 2)..<(bytes.count - 64), using: &random)
            if seed % 4 < 2 {
                for index in 0..<3 { bytes[offset + index * 17] ^= UInt8.random(in: 1...255, using: &random) }
            } else {
                for index in offset..<(offset + 64) { bytes[index] = 0xff }
            }
            copy[name] = bytes
            let outcomes = (Self.outcome(copy, threads: 1), Self.outcome(copy, threads: 2))
            if case .failure = outcomes.0 { failures += 1 }
            switch outcomes {
            case (.success(let one), .success(let two)):
                #expect(one.strings == two.strings && one.files == two.files && one.scopes == two.scopes
                        && one.ranges == two.ranges && one.lines == two.lines, "seed \(seed)")
            case (.failure(let one), .failure(let two)):
                #expect(one == two, "seed \(seed)")
            case (let one, let two):
                Issue.record("seed \(seed): one thread \(one), two threads \(two)")
            }
        }
        #expect(failures >= 2, "the 0xff runs break the input")
    }

    // MARK: Hand-made regressions

    /// Tag, attribute and form codes used by the hand-made DWARF below (DWARF 5 §7.5).
    enum Code {
        static let compileUnit: UInt64 = 0x11, subprogram: UInt64 = 0x2e, lexicalBlock: UInt64 = 0x0b,
                   inlinedSubroutine: UInt64 = 0x1d, enumerationType: UInt64 = 0x04, enumerator: UInt64 = 0x28,
                   variable: UInt64 = 0x34
        static let sibling: UInt64 = 0x01, name: UInt64 = 0x03, stmtList: UInt64 = 0x10, lowPC: UInt64 = 0x11,
                   highPC: UInt64 = 0x12, abstractOrigin: UInt64 = 0x31, declaration: UInt64 = 0x3c,
                   specification: UInt64 = 0x47, ranges: UInt64 = 0x55, constValue: UInt64 = 0x1c
        static let addr: UInt64 = 0x01, data4: UInt64 = 0x06, data8: UInt64 = 0x07, string: UInt64 = 0x08,
                   udata: UInt64 = 0x0f, ref4: UInt64 = 0x13, indirect: UInt64 = 0x16, secOffset: UInt64 = 0x17,
                   flagPresent: UInt64 = 0x19
    }

    /// Expects extraction to fail with `code`.
    static func expectFailure(_ sections: [String: [UInt8]], _ code: FormatError.Code,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        switch outcome(sections) {
        case .success:
            Issue.record("expected a \(code) error, got a model", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("DIEs nested deeper than the limit are refused; nesting within it is walked")
    func deepNesting() throws {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.lexicalBlock, true, []),
            (3, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, Code.data4, nil)]),
        ])
        func info(depth: Int) -> [UInt8] {
            var body = DWARFReaderForge()
            body.uleb(1)
            for _ in 0..<depth { body.uleb(2) }
            body.uleb(3)
            body.string("deep")
            body.u64(0x1000)
            body.u32(0x10)
            for _ in 0...depth { body.uleb(0) }
            return DWARFReaderForge.unit(body: body.bytes)
        }
        let model = try Self.outcome([".debug_info": info(depth: 200), ".debug_abbrev": abbreviations]).get()
        #expect(model.scopes.count == 1)
        #expect(model.strings[Int(model.scopes[0].name)] == "deep")
        Self.expectFailure([".debug_info": info(depth: 300), ".debug_abbrev": abbreviations], .limitExceeded)
    }

    @Test("one huge range list shared by many DIEs trips the work limit instead of taking quadratic time",
          .timeLimit(.minutes(5)))  // generous: a loaded 2-core machine runs every suite at once
    func sharedHugeRangeList() {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, [(Code.lowPC, Code.addr, nil)]),
            (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.ranges, Code.secOffset, nil)]),
        ])
        var ranges = DWARFReaderForge()
        for index in 0..<50_000 {
            ranges.u64(UInt64(index * 16 + 0x10))
            ranges.u64(UInt64(index * 16 + 0x18))
        }
        ranges.u64(0)
        ranges.u64(0)
        var body = DWARFReaderForge()
        body.uleb(1)
        body.u64(0)
        for _ in 0..<5000 {
            body.uleb(2)
            body.string("f")
            body.u32(0)
        }
        body.uleb(0)
        Self.expectFailure([".debug_info": DWARFReaderForge.unit(body: body.bytes), ".debug_abbrev": abbreviations,
                            ".debug_ranges": ranges.bytes], .limitExceeded)
    }

    @Test("units pointing into each other's line tables are refused before decoding")
    func overlappingLineTables() {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, false, [(Code.stmtList, Code.secOffset, nil)]),
        ])
        var info: [UInt8] = []
        for offset in 0..<100 {
            var body = DWARFReaderForge()
            body.uleb(1)
            body.u32(UInt32(offset))
            info += DWARFReaderForge.unit(body: body.bytes)
        }
        let line = [UInt8](repeating: 0x41, count: 200)
        Self.expectFailure([".debug_info": info, ".debug_abbrev": abbreviations, ".debug_line": line], .limitExceeded)
    }

    @Test("a LEB128 value wider than 64 bits is an error, not a silent wrap")
    func overlongLEB128() {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.subprogram, false, [(Code.lowPC, Code.addr, nil), (Code.highPC, Code.udata, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.uleb(2)
        body.u64(0x1000)
        body.bytes([UInt8](repeating: 0xff, count: 10) + [0x01])
        body.uleb(0)
        Self.expectFailure([".debug_info": DWARFReaderForge.unit(body: body.bytes), ".debug_abbrev": abbreviations],
                           .invalidValue)
    }

    @Test("an abbreviation with hundreds of attributes is refused")
    func tooManyAttributes() {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, false, Array(repeating: (Code.name, Code.flagPresent, nil), count: 300)),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        Self.expectFailure([".debug_info": DWARFReaderForge.unit(body: body.bytes), ".debug_abbrev": abbreviations],
                           .limitExceeded)
    }

    @Test("a sibling pointing backwards is not followed: the children are walked instead")
    func backwardSibling() throws {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.enumerationType, true, [(Code.sibling, Code.ref4, nil)]),
            (3, Code.enumerator, false, [(Code.name, Code.string, nil)]),
            (4, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, Code.data4, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.uleb(2)
        body.u32(12) // the unit-relative offset of this very DIE
        body.uleb(3)
        body.string("RED")
        body.uleb(0)
        body.uleb(4)
        body.string("after")
        body.u64(0x2000)
        body.u32(8)
        body.uleb(0)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit(body: body.bytes),
                                      ".debug_abbrev": abbreviations]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["after"])
        #expect(model.ranges == [AddressRange(start: 0x2000, end: 0x2008)])
    }

    @Test("a specification/abstract-origin cycle ends at the hop limit")
    func nameReferenceCycle() throws {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.subprogram, false, [(Code.abstractOrigin, Code.ref4, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, Code.data4, nil)]),
            (3, Code.subprogram, false, [(Code.specification, Code.ref4, nil), (Code.declaration, Code.flagPresent, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        // DIE A at unit offset 12: origin → B; B at 12 + 1 + 4 + 8 + 4 = 29: specification → A.
        body.uleb(2)
        body.u32(29)
        body.u64(0x3000)
        body.u32(4)
        body.uleb(3)
        body.u32(12)
        body.uleb(0)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit(body: body.bytes),
                                      ".debug_abbrev": abbreviations]).get()
        #expect(model.scopes.count == 1)
        #expect(model.scopes.first?.name == 0, "no name anywhere in the cycle")
    }

    @Test("rare forms are read or skipped by their real sizes (indirect, data16, signatures, blocks, GNU)")
    func rareForms() throws {
        // DWARF 5: a variable using every fixed- and variable-size form the walk must skip, then
        // a subprogram whose name and low_pc come through DW_FORM_indirect.
        let forms: [(UInt64, [UInt8])] = [
            (0x1e, [UInt8](repeating: 7, count: 16)), // data16
            (0x20, [UInt8](repeating: 8, count: 8)),  // ref_sig8
            (0x0a, [2, 0xaa, 0xbb]),                  // block1
            (0x03, [1, 0, 0xcc]),                     // block2
            (0x04, [1, 0, 0, 0, 0xdd]),               // block4
            (0x09, [2, 0xee, 0xff]),                  // block
            (0x18, [1, 0x9c]),                        // exprloc
            (0x0d, [0xff, 0x7f]),                     // sdata
            (0x22, [0x80, 0x01]),                     // loclistx
            (0x27, [1, 2, 3]),                        // strx3 (never resolved: skipped)
            (0x1f21, [0, 0, 0, 0]),                   // GNU_strp_alt
            (0x1f20, [0, 0, 0, 0]),                   // GNU_ref_alt
            (0x21, []),                               // implicit_const
        ]
        var attributes: [(UInt64, UInt64, Int64?)] = []
        for (index, form) in forms.enumerated() {
            attributes.append((0x2000 + UInt64(index), form.0, form.0 == 0x21 ? -5 : nil))
        }
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.variable, false, attributes),
            (3, Code.subprogram, false, [(Code.name, Code.indirect, nil), (Code.lowPC, Code.indirect, nil),
                                         (Code.highPC, Code.data8, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.uleb(2)
        for form in forms { body.bytes(form.1) }
        body.uleb(3)
        body.uleb(Code.string)
        body.string("rare")
        body.uleb(Code.addr)
        body.u64(0x4000)
        body.u64(0x20)
        body.uleb(0)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit5(body: body.bytes),
                                      ".debug_abbrev": abbreviations]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["rare"])
        #expect(model.ranges == [AddressRange(start: 0x4000, end: 0x4020)])
    }

    @Test("implicit constants are read whole: 32-bit ones in the attribute record, larger ones kept apart")
    func implicitConstants() throws {
        // DWARF 5 §7.5.3: high_pc as DW_FORM_implicit_const (an offset from low_pc, §2.17.2),
        // one value that fits in 32 bits and one that does not.
        let large: Int64 = 0x1_0000_0040
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, 0x21, 0x30)]),
            (3, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, 0x21, large)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.uleb(2)
        body.string("small")
        body.u64(0x4000)
        body.uleb(3)
        body.string("large")
        body.u64(0x10000)
        body.uleb(0)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit5(body: body.bytes),
                                      ".debug_abbrev": abbreviations]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["small", "large"])
        #expect(model.ranges == [AddressRange(start: 0x4000, end: 0x4030),
                                 AddressRange(start: 0x10000, end: 0x10000 + UInt64(large))])
    }

    @Test("abbreviations repeated across tables are stored once, each table keeping its own codes and implicit constants")
    func abbreviationsSharedAcrossTables() throws {
        // Three tables with different bytes: the second repeats the first's abbreviations under
        // swapped codes and with another large constant, the third under other codes.
        let large: Int64 = 0x1_0000_0040, other: Int64 = 0x2_0000_0080
        func subprogram(_ code: UInt64, _ constant: Int64) -> (UInt64, UInt64, Bool, [(UInt64, UInt64, Int64?)]) {
            (code, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                            (Code.highPC, 0x21, constant)])
        }
        let tables = [
            DWARFReaderForge.abbreviations([(1, Code.compileUnit, true, []), subprogram(2, 0x30), subprogram(3, large)]),
            DWARFReaderForge.abbreviations([(1, Code.compileUnit, true, []), subprogram(2, other), subprogram(3, 0x30)]),
            DWARFReaderForge.abbreviations([(5, Code.compileUnit, true, []), subprogram(7, large), subprogram(9, 0x30)]),
        ]
        let codes: [(UInt64, UInt64, UInt64)] = [(1, 2, 3), (1, 2, 3), (5, 7, 9)]
        var info: [UInt8] = []
        var offset = 0
        for (index, table) in tables.enumerated() {
            var body = DWARFReaderForge()
            body.uleb(codes[index].0)
            for (code, name, low) in [(codes[index].1, "a\(index)", UInt64(0x1000 * (2 * index + 1))),
                                      (codes[index].2, "b\(index)", UInt64(0x1000 * (2 * index + 2)))] {
                body.uleb(code)
                body.string(name)
                body.u64(low)
            }
            body.uleb(0)
            info += DWARFReaderForge.unit5(abbreviationOffset: UInt32(offset), body: body.bytes)
            offset += table.count
        }
        let model = try Self.outcome([".debug_info": info, ".debug_abbrev": tables.joined().map { $0 }]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["a0", "b0", "a1", "b1", "a2", "b2"])
        #expect(model.ranges == [AddressRange(start: 0x1000, end: 0x1030),
                                 AddressRange(start: 0x2000, end: 0x2000 + UInt64(large)),
                                 AddressRange(start: 0x3000, end: 0x3000 + UInt64(other)),
                                 AddressRange(start: 0x4000, end: 0x4030),
                                 AddressRange(start: 0x5000, end: 0x5000 + UInt64(large)),
                                 AddressRange(start: 0x6000, end: 0x6030)])
    }

    @Test("units whose abbreviation tables have the same bytes share one decoded table; equal-sized different ones do not")
    func sharedAbbreviationTables() throws {
        func table(highPCForm: UInt64) -> [UInt8] {
            DWARFReaderForge.abbreviations([
                (1, Code.compileUnit, true, []),
                (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                             (Code.highPC, highPCForm, nil)]),
            ])
        }
        let data4: UInt64 = 0x06, udata: UInt64 = 0x0f
        let first = table(highPCForm: data4), second = table(highPCForm: data4), third = table(highPCForm: udata)
        #expect(first.count == third.count)
        var info: [UInt8] = []
        for (index, (offset, name, low)) in [(0, "first", UInt64(0x1000)), (first.count, "second", 0x2000),
                                             (first.count + second.count, "third", 0x3000)].enumerated() {
            var body = DWARFReaderForge()
            body.uleb(1)
            body.uleb(2)
            body.string(name)
            body.u64(low)
            let size = UInt64(0x10 * (index + 1))
            if index == 2 { body.uleb(size) } else { body.u32(UInt32(size)) }
            body.uleb(0)
            info += DWARFReaderForge.unit(abbreviationOffset: UInt32(offset), body: body.bytes)
        }
        let model = try Self.outcome([".debug_info": info, ".debug_abbrev": first + second + third]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["first", "second", "third"])
        #expect(model.ranges == [AddressRange(start: 0x1000, end: 0x1010), AddressRange(start: 0x2000, end: 0x2020),
                                 AddressRange(start: 0x3000, end: 0x3030)])
    }

    @Test("DWARF 2-4 range lists: pairs relative to the unit base, base address selection, empty entries")
    func legacyRangeList() throws {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, [(Code.lowPC, Code.addr, nil)]),
            (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.ranges, Code.secOffset, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.u64(0x1000)
        body.uleb(2)
        body.string("split")
        body.u32(0)
        body.uleb(0)
        var ranges = DWARFReaderForge()
        for value: UInt64 in [0x10, 0x20, .max, 0x5000, 0x1, 0x3, 0x8, 0x8, 0, 0] { ranges.u64(value) }
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit(body: body.bytes), ".debug_abbrev": abbreviations,
                                      ".debug_ranges": ranges.bytes]).get()
        // DWARF 4 §2.17.3: offsets from the unit's low_pc until a selection entry (all ones) sets a new base.
        #expect(model.ranges == [AddressRange(start: 0x1010, end: 0x1020), AddressRange(start: 0x5001, end: 0x5003)])
    }

    @Test("DWARF 5 range lists: every DW_RLE kind, through DW_FORM_rnglistx, addr_base and rnglists_base")
    func rangeListEntryKinds() throws {
        let addrBase: UInt64 = 0x73, rnglistsBase: UInt64 = 0x74, rnglistx: UInt64 = 0x23
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, [(Code.lowPC, Code.addr, nil), (addrBase, Code.secOffset, nil),
                                         (rnglistsBase, Code.secOffset, nil)]),
            (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.ranges, rnglistx, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.u64(0x1000)
        body.u32(8)  // addresses start after the 8-byte .debug_addr header
        body.u32(12) // offsets start after the 12-byte .debug_rnglists header
        body.uleb(2)
        body.string("everywhere")
        body.uleb(0)
        body.uleb(0)
        var addresses = DWARFReaderForge()
        addresses.u32(4 + 3 * 8)
        addresses.u16(5)
        addresses.u8(8)
        addresses.u8(0)
        for address: UInt64 in [0x2000, 0x2100, 0x3000] { addresses.u64(address) }
        var list = DWARFReaderForge()
        list.u8(4); list.uleb(0x10); list.uleb(0x20)       // offset_pair from the unit base
        list.u8(1); list.uleb(0)                           // base_addressx → 0x2000
        list.u8(4); list.uleb(0x4); list.uleb(0x8)         // offset_pair from the new base
        list.u8(2); list.uleb(1); list.uleb(2)             // startx_endx
        list.u8(3); list.uleb(0); list.uleb(0x10)          // startx_length
        list.u8(5); list.u64(0x7000)                       // base_address
        list.u8(4); list.uleb(0); list.uleb(2)             // offset_pair
        list.u8(6); list.u64(0x8000); list.u64(0x8010)     // start_end
        list.u8(7); list.u64(0x9000); list.uleb(4)         // start_length
        list.u8(4); list.uleb(5); list.uleb(5)             // empty: dropped
        list.u8(0)                                         // end_of_list
        var rnglists = DWARFReaderForge()
        rnglists.u32(UInt32(2 + 1 + 1 + 4 + 4 + list.bytes.count))
        rnglists.u16(5)
        rnglists.u8(8)
        rnglists.u8(0)
        rnglists.u32(1) // offset_entry_count
        rnglists.u32(4) // list 0 starts right after the offsets table, relative to rnglists_base
        rnglists.bytes(list.bytes)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit5(body: body.bytes), ".debug_abbrev": abbreviations,
                                      ".debug_addr": addresses.bytes, ".debug_rnglists": rnglists.bytes]).get()
        #expect(model.scopes.map { model.strings[Int($0.name)] } == ["everywhere"])
        #expect(model.ranges == [
            AddressRange(start: 0x1010, end: 0x1020), AddressRange(start: 0x2004, end: 0x2008),
            AddressRange(start: 0x2100, end: 0x3000), AddressRange(start: 0x2000, end: 0x2010),
            AddressRange(start: 0x7000, end: 0x7002), AddressRange(start: 0x8000, end: 0x8010),
            AddressRange(start: 0x9000, end: 0x9004),
        ])
    }

    /// A DWARF 3 or 4 line table: header fields, directories, (file, directory index), program.
    static func legacyLineTable(version: UInt16, minimumInstructionLength: UInt8, maximumOperations: UInt8 = 1,
                                lineBase: Int8, lineRange: UInt8, standardLengths: [UInt8], directories: [String],
                                files: [(String, UInt64)], program: [UInt8]) -> [UInt8] {
        var header = DWARFReaderForge()
        header.u8(minimumInstructionLength)
        if version >= 4 { header.u8(maximumOperations) }
        header.u8(1)
        header.u8(UInt8(bitPattern: lineBase))
        header.u8(lineRange)
        header.u8(UInt8(standardLengths.count + 1))
        header.bytes(standardLengths)
        for directory in directories { header.string(directory) }
        header.u8(0)
        for (name, directory) in files {
            header.string(name)
            header.uleb(directory)
            header.uleb(0)
            header.uleb(0)
        }
        header.u8(0)
        var table = DWARFReaderForge()
        table.u16(version)
        table.u32(UInt32(header.bytes.count))
        table.bytes(header.bytes)
        table.bytes(program)
        var line = DWARFReaderForge()
        line.u32(UInt32(table.bytes.count))
        line.bytes(table.bytes)
        return line.bytes
    }

    @Test("line programs: every standard and extended opcode, define_file, unknown opcodes, VLIW op_index")
    func lineProgramOpcodes() throws {
        let standard: [UInt8] = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]
        var program = DWARFReaderForge()
        program.bytes([0, 9, 2]); program.u64(0x10000)     // DW_LNE_set_address
        program.u8(31)                                     // special: 17 = 1 op (4 bytes) and line +2
        program.bytes([5, 7])                              // DW_LNS_set_column 7
        program.u8(8)                                      // DW_LNS_const_add_pc: (255 - 14) / 12 = 20 ops
        program.bytes([13, 0x81, 0x01, 0x05])              // opcode 13, unknown here: two LEB128 operands
        program.bytes([4, 2])                              // DW_LNS_set_file 2
        program.u8(3); program.sleb(-1)                    // DW_LNS_advance_line -1
        program.u8(1)                                      // DW_LNS_copy
        program.u8(9); program.u16(0x100)                  // DW_LNS_fixed_advance_pc
        program.bytes([0, 2, 4, 3])                        // DW_LNE_set_discriminator
        program.bytes([0, 8, 3]); program.string("c.c"); program.bytes([1, 0, 0]) // DW_LNE_define_file
        program.bytes([4, 3])                              // DW_LNS_set_file 3 (the defined file)
        program.bytes([2, 3])                              // DW_LNS_advance_pc 3 ops
        program.u8(17)                                     // special: 3 = no advance, line +0
        program.bytes([2, 1])                              // DW_LNS_advance_pc 1 op
        program.bytes([0, 1, 1])                           // DW_LNE_end_sequence
        program.bytes([0, 9, 2]); program.u64(0)           // a sequence of removed code, at 0
        program.bytes([1, 2, 1, 0, 1, 1])
        program.bytes([0, 9, 2]); program.u64(0x20000)     // an unterminated sequence
        program.u8(1)
        let first = Self.legacyLineTable(version: 3, minimumInstructionLength: 4, lineBase: -3, lineRange: 12,
                                         standardLengths: standard + [2], directories: ["inc"],
                                         files: [("a.c", 0), ("b.h", 1)], program: program.bytes)
        var vliw = DWARFReaderForge()
        vliw.bytes([0, 9, 2]); vliw.u64(0x1000)
        vliw.bytes([2, 4, 1])                              // 4 ops of 3 per 8-byte bundle: +8, op_index 1
        vliw.bytes([2, 2, 1])                              // op_index 3 → next bundle: +8, op_index 0
        vliw.bytes([2, 1])
        vliw.bytes([0, 1, 1])
        let second = Self.legacyLineTable(version: 4, minimumInstructionLength: 8, maximumOperations: 3, lineBase: -5,
                                          lineRange: 14, standardLengths: standard, directories: [],
                                          files: [("/abs/v.c", 0)], program: vliw.bytes)
        let compDir: UInt64 = 0x1b
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, false, [(compDir, Code.string, nil), (Code.stmtList, Code.secOffset, nil)]),
        ])
        var info: [UInt8] = []
        for offset in [0, first.count] {
            var body = DWARFReaderForge()
            body.uleb(1)
            body.string("/src")
            body.u32(UInt32(offset))
            info += DWARFReaderForge.unit(version: 3, body: body.bytes)
        }
        let model = try Self.outcome([".debug_info": info, ".debug_abbrev": abbreviations,
                                      ".debug_line": first + second]).get()
        let rows = model.lines.map {
            DWARFReaderOracle.Row(address: $0.address, path: Self.path(model, $0.file), line: $0.line, column: $0.column,
                                  isEndSequence: $0.isEndSequence)
        }
        // DWARF 3 §6.2.5: rows from the state machine by hand; directory 0 is the compilation directory.
        #expect(rows == [
            .init(address: 0x10004, path: "/src/a.c", line: 3, column: 0, isEndSequence: false),
            .init(address: 0x10054, path: "/src/inc/b.h", line: 2, column: 7, isEndSequence: false),
            .init(address: 0x10160, path: "/src/inc/c.c", line: 2, column: 7, isEndSequence: false),
            .init(address: 0x10164, path: "/src/inc/c.c", line: 2, column: 7, isEndSequence: true),
            .init(address: 0x1008, path: "/abs/v.c", line: 1, column: 0, isEndSequence: false),
            .init(address: 0x1010, path: "/abs/v.c", line: 1, column: 0, isEndSequence: false),
            .init(address: 0x1010, path: "/abs/v.c", line: 1, column: 0, isEndSequence: true),
        ])
    }

    @Test("line tables: line_range 0 with a special opcode, and entry counts beyond the header, are errors")
    func malformedLineTables() {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, false, [(Code.stmtList, Code.secOffset, nil)]),
        ])
        var body = DWARFReaderForge()
        body.uleb(1)
        body.u32(0)
        let info = DWARFReaderForge.unit(body: body.bytes)

        // DWARF 4 header with line_range 0, then special opcode 20.
        var header = DWARFReaderForge()
        header.u8(1)  // minimum_instruction_length
        header.u8(1)  // maximum_operations_per_instruction
        header.u8(1)  // default_is_stmt
        header.u8(0xfb) // line_base -5
        header.u8(0)  // line_range
        header.u8(13) // opcode_base
        header.bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
        header.u8(0)  // no include directories
        header.string("a.c")
        header.bytes([0, 0, 0])
        header.u8(0)  // end of file names
        var table = DWARFReaderForge()
        table.u16(4)
        table.u32(UInt32(header.bytes.count))
        table.bytes(header.bytes)
        table.u8(20)
        var line = DWARFReaderForge()
        line.u32(UInt32(table.bytes.count))
        line.bytes(table.bytes)
        Self.expectFailure([".debug_info": info, ".debug_abbrev": abbreviations, ".debug_line": line.bytes], .invalidValue)

        // DWARF 5 header claiming 2^40 directories in a few bytes.
        var header5 = DWARFReaderForge()
        header5.bytes([1, 1, 1, 0xfb, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
        header5.u8(1)  // directory_entry_format_count
        header5.uleb(1) // DW_LNCT_path
        header5.uleb(Code.string)
        header5.uleb(1 << 40)
        header5.string("/")
        var table5 = DWARFReaderForge()
        table5.u16(5)
        table5.u8(8)
        table5.u8(0)
        table5.u32(UInt32(header5.bytes.count))
        table5.bytes(header5.bytes)
        var line5 = DWARFReaderForge()
        line5.u32(UInt32(table5.bytes.count))
        line5.bytes(table5.bytes)
        Self.expectFailure([".debug_info": info, ".debug_abbrev": abbreviations, ".debug_line": line5.bytes], .invalidValue)
    }
}

extension DWARFReaderTests {
    /// Names reach the model's byte arena as `String(decoding:as:)` would make them: ill-formed
    /// UTF-8 repaired (U+FFFD), and names equal only canonically (é as one scalar or two) kept
    /// apart, byte for byte.
    @Test("names are repaired like String(decoding:) and compared by their bytes")
    func nameBytes() throws {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, Code.compileUnit, true, []),
            (2, Code.subprogram, false, [(Code.name, Code.string, nil), (Code.lowPC, Code.addr, nil),
                                         (Code.highPC, Code.data4, nil)]),
        ])
        let names: [[UInt8]] = [
            [0x62, 0x61, 0x64, 0xFF, 0x21],                          // "bad", a stray byte, "!"
            Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8), Array("caf\u{E9}".utf8),
        ]
        var body = DWARFReaderForge()
        body.uleb(1)
        for (index, name) in names.enumerated() {
            body.uleb(2)
            body.bytes(name + [0])
            body.u64(0x1000 + UInt64(index) * 0x100)
            body.u32(0x10)
        }
        body.uleb(0)
        let model = try Self.outcome([".debug_info": DWARFReaderForge.unit(body: body.bytes),
                                      ".debug_abbrev": abbreviations]).get()
        let stored = model.scopes.map { scope in model.strings.withBytes(of: Int(scope.name)) { Array($0) } }
        #expect(stored == names.map { Array(String(decoding: $0, as: UTF8.self).utf8) })
        #expect(model.scopes[1].name != model.scopes[2].name)
        #expect(model.scopes[1].name == model.scopes[3].name)
    }
}
