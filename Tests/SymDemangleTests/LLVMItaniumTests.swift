import Foundation
@testable import SymDemangle
import Testing
import TestSupport

/// crashsym's own Itanium demangler (`ItaniumParser`) against LLVM 21's, which it must match byte
/// for byte: the committed vectors (`cxx-llvm21.tsv`, names from clang++ and g++ on C++20/23 code,
/// a C++20 module, hand-written productions, and a sample of the toolchain's libraries, made by
/// `scripts/build-demangle-vectors`), a fresh run of the oracle (`llvm-nm -C`) over them, every
/// `_Z` symbol of the Swift toolchain's libraries, and truncated and mutated names.
@Suite struct LLVMItaniumTests {
    /// `(name, LLVM 21's answer)` from the committed vector file; the answer is the name itself
    /// where LLVM cannot demangle it.
    static func vectors() throws -> [(String, String)] {
        try Fixtures.names("cxx-llvm21.tsv").map { line in
            let fields = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(fields[0]), fields.count > 1 ? String(fields[1]) : "")
        }
    }

    /// What llvm-nm prints for `name` when crashsym's demangler answers: the answer, or the name.
    static func ours(_ name: String) -> String {
        Demangler.demangleItaniumAsLLVM(name) ?? name
    }

    /// Every committed vector prints as LLVM 21 printed it, including the names LLVM refuses
    /// (nil here). The file covers what it claims: constrained parameters, requires-clauses,
    /// explicit object parameters, lambda template parameter lists, constrained placeholders,
    /// modules, structured bindings, and names LLVM refuses.
    @Test func everyVectorPrintsAsLLVM21() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count > 3_000)
        var mismatches = 0
        for (name, llvm) in vectors where Self.ours(name) != llvm {
            mismatches += 1
            #expect(Self.ours(name) == llvm, "\(name)")
        }
        #expect(mismatches == 0)
        let demangled = vectors.filter { $0.0 != $0.1 }
        for (production, spelling) in [("Tk", "concepts::twice<int>(int)"), ("NH", "(this "), ("Ul", "'lambda'<typename $T>"),
                                       ("Dk", " auto "), ("DK", " decltype(auto) "), ("W6shapes", "@shapes.geometry"),
                                       ("DC", "[first, second]"), ("Q", " requires ")] {
            #expect(demangled.contains { $0.0.contains(production) && $0.1.contains(spelling) }, "\(production)")
        }
        #expect(vectors.contains { $0.0 == $0.1 }, "names LLVM refuses are vectors too")
    }

    /// The committed answers are what the toolchain's LLVM prints today: the file is not stale,
    /// and it was made with LLVM 21.
    @Test(.timeLimit(.minutes(5))) func committedVectorsAreTheOraclesAnswers() throws {
        #expect(try LLVMOracle.version().contains("LLVM version 21"))
        let vectors = try Self.vectors()
        let fresh = try LLVMOracle.demangle(vectors.map(\.0))
        for ((name, committed), answer) in zip(vectors, fresh) where committed != answer {
            Issue.record("\(name): committed \(committed), llvm-nm now \(answer)")
        }
    }

    /// Every prefix of every compiler-made and hand-written vector (of up to 160 bytes) prints
    /// as LLVM prints it: malformed names are refused where LLVM refuses them, and never trap.
    @Test(.timeLimit(.minutes(10))) func truncatedNamesPrintAsLLVM21() throws {
        let sources = try Set(Fixtures.names("cxx-llvm21-extra.txt") + Self.vectors().map(\.0).filter { name in
            ["Tk", "NH", "Ul", "Dk", "DK", "W", "DC", "Q"].contains { name.contains($0) }
        }).filter { $0.utf8.count <= 160 }
        var truncations = Set<String>()
        for name in sources {
            let bytes = Array(name.utf8)
            for end in 1..<bytes.count { truncations.insert(String(decoding: bytes[..<end], as: UTF8.self)) }
        }
        let names = truncations.sorted()
        #expect(names.count > 5_000)
        let llvm = try LLVMOracle.demangle(names)
        for (name, answer) in zip(names, llvm) where Self.ours(name) != answer {
            Issue.record("\(name): ours \(Self.ours(name)), LLVM \(answer)")
        }
    }

    /// Seeded mutations of the vectors (bytes inserted, deleted, replaced, runs repeated), which
    /// reach substitutions, template parameters and forward references that point anywhere:
    /// crashsym prints exactly what LLVM prints, or refuses where LLVM refuses.
    @Test(.timeLimit(.minutes(10)), arguments: 1...2 as ClosedRange<UInt64>)
    func mutatedNamesPrintAsLLVM21(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let sources = try Self.vectors().map(\.0).filter { $0.utf8.count < 120 }
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_".utf8)
        var names = Set<String>()
        for _ in 0..<8_000 {
            var bytes = Array(sources.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 2...bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                case 1 where position < bytes.count: bytes.remove(at: position)
                case 2 where position < bytes.count: bytes[position] = alphabet.randomElement(using: &generator)!
                default:
                    let other = Int.random(in: 2...bytes.count, using: &generator)
                    let run = bytes[min(position, other)..<max(position, other)].prefix(8)
                    bytes.insert(contentsOf: run, at: position)
                }
            }
            names.insert(String(decoding: bytes, as: UTF8.self))
        }
        let sorted = names.sorted()
        let llvm = try LLVMOracle.demangle(sorted)
        var demangled = 0
        for (name, answer) in zip(sorted, llvm) {
            if answer != name { demangled += 1 }
            if Self.ours(name) != answer { Issue.record("\(name): ours \(Self.ours(name)), LLVM \(answer)") }
        }
        #expect(demangled > 500, "the mutations still demangle often enough to test printing")
    }

    /// Every `_Z` symbol of the Swift toolchain's shared libraries (the LLVM, Clang, LLDB and
    /// Swift compiler libraries: hundreds of thousands of real names) and of libstdc++ prints as
    /// LLVM 21 prints it.
    @Test(.timeLimit(.minutes(15))) func toolchainLibrariesPrintAsLLVM21() throws {
        let toolchainLib = URL(fileURLWithPath: LLVMOracle.toolchain).deletingLastPathComponent().appendingPathComponent("lib")
        var libraries = try FileManager.default.contentsOfDirectory(atPath: toolchainLib.path)
            .filter { $0.hasSuffix(".so") }.map { toolchainLib.appendingPathComponent($0).path }
        libraries += try FileManager.default.contentsOfDirectory(atPath: toolchainLib.appendingPathComponent("swift/linux").path)
            .filter { $0.hasSuffix(".so") }.map { toolchainLib.appendingPathComponent("swift/linux/" + $0).path }
        libraries.append("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
        var seen = Set<String>()
        var compared = 0
        var demangled = 0
        for library in libraries {
            for (name, llvm) in try LLVMOracle.symbolPairs(in: library) where seen.insert(name).inserted {
                compared += 1
                if llvm != name { demangled += 1 }
                let ours = Self.ours(name)
                if ours != llvm { Issue.record("\(library): \(name): ours \(ours), LLVM \(llvm)") }
            }
        }
        #expect(compared > 200_000, "\(compared) names in \(libraries.count) libraries")
        #expect(demangled > compared - 1_000)
    }
}

/// How `Demangler` uses the own demangler: only for names libiberty refuses, so every answer that
/// was right before stays byte-identical.
@Suite struct ItaniumFallbackTests {
    /// Names libiberty refuses come out as LLVM 21 prints them (nil where LLVM refuses too);
    /// names it reads come out as it prints them, whatever LLVM says. One exception keeps
    /// today's answer: a name libiberty reads but for a clone suffix it refuses (`.llvm.1A.cold`)
    /// stays undemangled rather than mixing LLVM's ` (.cold)` with libiberty's `[clone .cold]`.
    @Test func libibertyFirstThenLLVM() throws {
        let vectors = try LLVMItaniumTests.vectors()
        let demangler = Demangler()
        var fallbacks = 0
        var differentSpelling = 0
        for (name, llvm) in vectors where Demangler.scheme(of: name) == .itanium {
            if let libiberty = ItaniumDemangler.demangleWithLibiberty(Array(name.utf8)) {
                #expect(demangler.demangle(name) == libiberty, "\(name)")
                if libiberty != llvm { differentSpelling += 1 }
                continue
            }
            let head = String(name.prefix { $0 != "." })
            if head != name, ItaniumDemangler.demangleWithLibiberty(Array(head.utf8)) != nil {
                #expect(demangler.demangle(name) == nil, "\(name)")
                continue
            }
            #expect(demangler.demangle(name) == (llvm == name ? nil : llvm), "\(name)")
            if llvm != name { fallbacks += 1 }
        }
        #expect(fallbacks > 400, "C++20/23 names c++filt refuses and LLVM reads")
        #expect(differentSpelling > 100, "names both read but spell differently keep c++filt's spelling")
        #expect(demangler.demangle("_ZN6modern11constrainedITkSt8integraliEET_S1_") == "int modern::constrained<int>(int)")
        #expect(demangler.demangle("_ZNH8deducing6Widget3getERKS0_") == "deducing::Widget::get(this deducing::Widget const&)")
        // Mach-O's extra underscore reaches the fallback too.
        #expect(demangler.demangle("__ZNH8deducing6Widget3getERKS0_") == "deducing::Widget::get(this deducing::Widget const&)")
    }

    /// Without parameters (`--no-params`), a name only LLVM reads prints as LLVM's
    /// `itaniumDemangle(name, ParseParams: false)`: the name with its template arguments.
    @Test func withoutParameters() {
        let demangler = Demangler(parameters: false)
        #expect(demangler.demangle("_ZN8concepts5twiceITkSt8integraliEET_S1_") == "concepts::twice<int>")
        #expect(demangler.demangle("_ZNH8deducing6Widget7byValueES0_i") == "deducing::Widget::byValue")
    }

    /// The text filter and the byte API take the fallback as the String API does.
    @Test func textAndBytesTakeTheFallback() {
        let name = "_ZN8concepts6HolderIsE11constrainedEvQ5SmallIT_E"
        let expected = "concepts::Holder<short>::constrained() requires Small<T>"
        #expect(TextDemangler().demangleText("at \(name)+0x10") == "at \(expected)+0x10")
        var bytes: [UInt8]?
        let answered = Array(name.utf8).withUnsafeBytes { raw in Demangler().withDemangled(utf8: raw) { bytes = Array($0) } }
        #expect(answered && bytes == Array(expected.utf8))
    }
}

/// Names built to hurt a recursive demangler: it must answer (nil) quickly, never trap, never
/// exhaust memory. LLVM itself overflows its stack or runs for hours on several of them, so
/// these are checked against the bounds, not against the oracle.
@Suite struct ItaniumHostileNameTests {
    static func demangle(_ name: String) -> String? { Demangler.demangleItaniumAsLLVM(name) }

    /// Nesting far deeper than any real name: pointers, template arguments, function types,
    /// expressions and local names.
    @Test(arguments: [
        "_Z1f" + String(repeating: "P", count: 100_000) + "i",
        "_Z1f" + String(repeating: "1AI", count: 20_000) + "i" + String(repeating: "E", count: 20_000),
        "_Z1f" + String(repeating: "PFv", count: 20_000) + "i" + String(repeating: "E", count: 20_000),
        "_Z1fIiEDT" + String(repeating: "pl", count: 50_000) + "Li1E" + String(repeating: "Li1E", count: 50_000) + "ES0_",
        "_Z" + String(repeating: "Z", count: 30_000) + "1fv",
        "_Z1f" + String(repeating: "A_", count: 50_000) + "i",
    ])
    func deepNesting(name: String) {
        #expect(Self.demangle(name) == nil)
    }

    /// A chain of substitutions, each a pointer to the one before: the parser stays shallow but
    /// the tree is 5,000 levels deep. The printer's depth limit refuses it (LLVM prints it).
    @Test func deepTreeFromShallowParse() {
        func chain(_ levels: Int) -> String {
            var name = "_Z1fPi"
            for level in 0..<levels { name += level == 0 ? "PS_" : "PS" + Self.seqID(level - 1) + "_" }
            return name
        }
        #expect(Self.demangle(chain(5_000)) == nil)
        #expect(Self.demangle(chain(20))?.hasSuffix("int" + String(repeating: "*", count: 21) + ")") == true)
    }

    /// `<seq-id>` for substitution number `index + 1` (`S0_` is the second substitution).
    static func seqID(_ index: Int) -> String {
        String(index, radix: 36, uppercase: true)
    }

    /// Real depth below the limit still demangles: 50 nested templates.
    @Test func reasonableDepthDemangles() {
        let name = "_Z1f" + String(repeating: "1AI", count: 50) + "i" + String(repeating: "E", count: 50)
        let result = Self.demangle(name)
        #expect(result == "f(" + String(repeating: "A<", count: 50) + "int" + String(repeating: ">", count: 50) + ")")
    }

    /// Back-reference and length numbers past 64 bits wrap as LLVM's `size_t` does (so
    /// `_Z18446744073709551617f` is `f`, as LLVM reads it), and are checked before use as an index.
    @Test(arguments: [
        "_Z1fS99999999999999999999999999_", "_Z1fSZZZZZZZZZZZZZZZZZZZZZZZZZZZZ_", "_Z1fIiET99999999999999999999999_",
        "_Z99999999999999999999999f", "_Z18446744073709551617f", "_Z1fIiETL99999999999999999999_0_",
        "_Z1fIiEDTfp99999999999999999999999_E", "_ZN1AcvT18446744073709551615_IiEEv",
    ])
    func hugeNumbers(name: String) throws {
        #expect(Self.demangle(name) ?? name == (try LLVMOracle.demangle([name]))[0])
    }

    /// Each argument is a template of two copies of the previous one: the output doubles per
    /// level (2^64 bytes for 64 levels). The output budget stops it.
    @Test func exponentialOutputIsRefused() throws {
        @Sendable func doubling(_ levels: Int) -> String {
            var name = "_Z1f1AIiiE"
            for level in 0..<levels {
                let previous = "S" + Self.seqID(level) + "_"
                name += "S_I" + previous + previous + "E"
            }
            return name
        }
        // Bounded from the work's own start (a full run may keep the test waiting for a thread).
        #expect(try HangGuard.run(within: 60, "64 doubling levels") { Self.demangle(doubling(64)) } == nil)
        // Eight levels (a few kilobytes) are fine.
        #expect(Self.demangle(doubling(8)).map { $0.utf8.count > 4_000 } == true)
    }

    /// Substitutions and forward template references that point at themselves (a conversion
    /// operator's `T_` resolved to a template argument that is that operator's own type): the
    /// printer's guards end the cycle instead of recursing forever.
    @Test(arguments: [
        "_ZN1AcvT_IS1_EEv", "_ZN1AcvT_IJS1_EEEv", "_ZcvT_IJS_EE", "_ZN1AcvRT_IS1_EEv", "_ZN1AcvOT_IRS1_EEv",
        "_Z1fIRS_EvT_", "_ZN1AcvT_IS0_S1_EEv", "_ZN1AcvPT_IPS1_EEv",
    ])
    func selfReferences(name: String) throws {
        let ours = try HangGuard.run(within: 60, name) { Self.demangle(name) }
        #expect(ours == nil || ours!.utf8.count <= ItaniumParser.maximumOutput)
        #expect(ours ?? name == (try LLVMOracle.demangle([name]))[0])
    }

    /// Random bytes after every prefix the parser dispatches on.
    @Test(.timeLimit(.minutes(5)), arguments: 1...3 as ClosedRange<UInt64>)
    func randomNames(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.".utf8)
        let prefixes = ["_Z", "_ZN", "_ZZ", "_ZT", "_ZG", "_Z1fI", "_Z1fIiEDT", "_ZN1AcvT_I", "___Z", "_ZNH", "_Z1fIiEvQ"]
        for _ in 0..<3_000 {
            var bytes = Array(prefixes.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 0...80, using: &generator) { bytes.append(alphabet.randomElement(using: &generator)!) }
            let result = ItaniumParser.demangle(bytes)
            #expect((result?.count ?? 0) <= ItaniumParser.maximumOutput)
        }
    }
}
