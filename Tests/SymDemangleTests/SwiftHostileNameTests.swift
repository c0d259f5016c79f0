import Foundation
@testable import SymDemangle
import Testing
import TestSupport

/// Swift names that make the runtime's printer run away (nested substitutions double the text
/// at each level, word substitutions grow with the square of the length) cost bounded time and
/// memory: `SwiftOutputBound` sends them to `SwiftDemanglerChild`, which demangles what finishes
/// within its limits and refuses the rest (printed mangled). Real names print as before.
@Suite struct SwiftHostileNameTests {
    let demangler = Demangler()

    /// A valid name of `levels` nested dictionaries, each level's key and value the previous
    /// level by substitution: about 8 bytes a level, and the printed text doubles with each.
    static func nestedSubstitutions(_ levels: Int) -> String {
        var name = "$sSaySiG"
        for level in 0..<levels {
            let reference: String
            switch level {
            case 0..<26: reference = "A" + String(UnicodeScalar(UInt8(65 + level)))
            case 26: reference = "A_"
            default: reference = "A\(level - 27)_"
            }
            name += "SDy\(reference)\(reference)G"
        }
        return name + "N"
    }

    /// A valid name whose identifier repeats the word `Long…` (of `wordLength` bytes) `copies`
    /// times by word substitution: quadratic text from a linear name.
    static func wordStorm(wordLength: Int, copies: Int) -> String {
        let word = "L" + String(repeating: "o", count: wordLength - 1)
        return "$s4main\(word.utf8.count)\(word)V" + "0" + String(repeating: "b", count: copies) + "B0VN"
    }

    /// A chain of `steps` dictionaries, each the previous one twice, behind `HD<n>_`, which reads
    /// an index (an exact reading that took `HD` for two bytes read `<n>` as an identifier's
    /// length and skipped the chain as text: the review's bypass, 180 bytes printing 436 MB).
    static func behindConformanceIndex(_ steps: Int) -> String {
        let letters = Array("CDEFGHIJKLMNOPQRSTUVWXYZ")
        let rest = "_4main1TV" + (0..<steps).map { "SDyA2\(letters[$0])G" }.joined()
        return "$sxSHHD\(rest.utf8.count)" + rest
    }

    private func bound(_ name: String) -> UInt64 {
        Array(name.utf8).withUnsafeBytes { SwiftOutputBound.bound($0) }
    }

    /// The bound is sound on real names: never below what `swift-demangle --no-sugar` prints (the
    /// runtime's text) for any name the toolchain wrote, nor for the nested names it can print.
    @Test func boundIsAtLeastThePrintedLength() throws {
        let names = try Fixtures.names("swift.txt") + Fixtures.names("swift-sugar.txt")
            + (1...12).map(Self.nestedSubstitutions) + [Self.wordStorm(wordLength: 40, copies: 2000)]
            + [Self.behindConformanceIndex(10), "$sr" + String(repeating: "127_", count: 500) + "l"]
        let printed = try ReferenceTool.swiftDemangleNoSugar.demangle(names)
        for (name, text) in zip(names, printed) {
            #expect(bound(name) >= UInt64(text.utf8.count), "\(name)")
        }
        // Some real names are below the in-process limit, the nested ones from 5 levels above it.
        #expect(names.contains { bound($0) <= SwiftRuntimeDemangler.inProcessOutputBound })
        #expect(bound(Self.nestedSubstitutions(5)) > SwiftRuntimeDemangler.inProcessOutputBound)
        #expect(bound(Self.behindConformanceIndex(23)) > SwiftRuntimeDemangler.inProcessOutputBound)
    }

    /// Sound on mutated names too: seeded edits of real names (substitutions, word references,
    /// repeat counts, copies of pieces inserted) that the bound lets run in this process print no
    /// more than it says. (Names above the limit are not demangled here: they might not finish.)
    @Test func boundHoldsForMutatedNames() throws {
        let real = try Fixtures.names("swift.txt").filter { $0.hasPrefix("$s") }
        var random = SplitMix64(seed: 0x5EED_DE3A)
        let pieces = ["A", "AA", "AB", "Ab", "A0_", "A2a", "A9B", "0a", "0aB", "0bA0", "S3i", "Sa", "G", "y", "t", "_", "SDy",
                      // operators the bound reads to the byte from the start of a name
                      "L", "LL", "L0_", "Ya", "Yt", "qd_0_", "q_", "qz", "r0_l", "rzl", "g_", "00", "3ab", "03abA", "Hp", "p", "Sc", "S2cT",
                      "HD3_", "HI_", "HA12_", "r127_l", "r5_5_l"]
        var mutated: [String] = []
        for _ in 0..<3000 {
            var bytes = Array(real[random.int(0...(real.count - 1))].utf8)
            for _ in 0..<random.int(1...4) {
                let at = random.int(2...bytes.count)
                if random.chance(50) {
                    bytes.insert(contentsOf: pieces[random.int(0...(pieces.count - 1))].utf8, at: at)
                } else {
                    let start = random.int(2...(bytes.count - 1)), end = min(bytes.count, start + random.int(1...12))
                    bytes.insert(contentsOf: Array(bytes[start..<end]), at: at)
                }
            }
            let name = String(decoding: bytes, as: UTF8.self)
            if bound(name) <= SwiftRuntimeDemangler.inProcessOutputBound { mutated.append(name) }
        }
        #expect(mutated.count > 500)
        let printed = try ReferenceTool.swiftDemangleNoSugar.demangle(mutated)
        for (name, text) in zip(mutated, printed) where text != name {
            #expect(bound(name) >= UInt64(text.utf8.count), "\(name)")
        }
    }

    /// Nested substitutions of 16 to 40 levels each finish quickly (the deepest would print
    /// 2^40 times a dozen bytes) and print mangled; a child serves them.
    @Test func nestedSubstitutionsFinishAndPrintMangled() throws {
        let names = (16...40).map(Self.nestedSubstitutions)
        let answers = try HangGuard.run(within: 120, "nested substitutions") { [demangler] in
            names.map { demangler.demangleOrSelf($0) }
        }
        #expect(answers == names)
        #expect(SwiftDemanglerChild.childrenStarted > 0)
        #expect(DemangleRefusals.swiftNames.values.reduce(0, +) > 0)
    }

    /// A name above the bound whose text is modest is demangled in the child exactly as
    /// `swift-demangle` prints it (sugar and all), by both entry points.
    @Test func namesAboveTheBoundStillDemangle() throws {
        let names = [Self.nestedSubstitutions(8), Self.nestedSubstitutions(13), Self.wordStorm(wordLength: 40, copies: 2000)]
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(bound(name) > SwiftRuntimeDemangler.inProcessOutputBound)
            #expect(theirs != name)
            #expect(demangler.demangleOrSelf(name) == theirs)
            var bytes: [UInt8] = []
            #expect(Array(name.utf8).withUnsafeBytes { demangler.withDemangled(utf8: $0) { bytes = Array($0) } })
            #expect(String(decoding: bytes, as: UTF8.self) == theirs)
        }
        let simplified = try ReferenceTool(path: ReferenceTool.swiftDemangle.path, arguments: ["--simplified", "--compact"],
                                           takesNamesAsArguments: true).demangle([names[0]])
        #expect(Demangler(swiftNames: .simplified).demangleOrSelf(names[0]) == simplified[0])
    }

    /// Word-substitution storms and a long name finish quickly and print mangled.
    @Test func wordStormsAndLongNamesFinish() throws {
        let storm = Self.wordStorm(wordLength: 2000, copies: 6000)  // 8 KB of name, 12 MB of text
        let long = "$s4main" + String(repeating: "3fooV", count: 24_000) + "N"  // 120 KB
        let names = [storm, long]
        let answers = try HangGuard.run(within: 120, "word storm and long name") { [demangler] in
            names.map { demangler.demangleOrSelf($0) }
        }
        #expect(answers == names)
        #expect(DemangleRefusals.swiftNames[.nameTooLong, default: 0] > 0)
    }

    /// The bound itself is linear: a megabyte of the worst bytes for it is read in well under
    /// the guard's time (a quadratic scan would take hours).
    @Test func boundIsLinear() throws {
        let worst = "$s" + String(repeating: "0aA0A0bAa1", count: 100_000)
        let value = try HangGuard.run(within: 60, "bound of 1 MB") { Array(worst.utf8).withUnsafeBytes { SwiftOutputBound.bound($0) } }
        #expect(value == SwiftOutputBound.saturation)
    }
}
