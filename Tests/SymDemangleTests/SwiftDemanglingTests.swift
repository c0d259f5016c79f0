import Foundation
@testable import SymDemangle
import Testing

/// Swift names against the toolchain's `swift-demangle`. Our Swift path is the runtime's
/// `swift_demangle`, the same demangler: these tests check which names go there, prefixes and
/// ownership of the result.
@Suite struct SwiftDemanglingTests {
    let demangler = Demangler()

    /// Every name from the compiled Swift program, and its Mach-O spelling with a leading `_`,
    /// demangles exactly as `swift-demangle` prints it.
    @Test func matchesSwiftDemangle() throws {
        let plain = try Fixtures.names("swift.txt")
        let names = plain + plain.map { "_" + $0 }
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(Demangler.scheme(of: name) == .swift, "\(name)")
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
        // Generic specialisations and async/coroutine suffixes are among them.
        #expect(plain.contains { $0.hasSuffix("Tg5") })
        #expect(plain.contains { $0.contains(".resume.") })
    }

    /// A demangled name longer than the stack buffer takes the runtime's malloc'ed string, and
    /// reads the same (every real name, with buffers too small for most of them).
    @Test func namesLongerThanTheBufferReadTheSame() throws {
        let names = try Fixtures.names("swift.txt")
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        for (name, theirs) in zip(names, expected) {
            for size in [1, 16, 64] {
                #expect(SwiftRuntimeDemangler.demangle(Array(name.utf8), bufferSize: size) == theirs, "\(name) \(size)")
            }
        }
        // A name with a NUL inside is refused rather than cut short.
        #expect(SwiftRuntimeDemangler.demangle(Array("$s4main3fooyyF".utf8) + [0, 0x41]) == nil)
    }

    /// The byte API reads every real name (and its Mach-O spelling) as `swift-demangle` prints
    /// it, with buffers too small for most of them too; it refuses what `demangle` refuses.
    @Test func bytesMatchSwiftDemangle() throws {
        let plain = try Fixtures.names("swift.txt")
        let names = plain + plain.map { "_" + $0 }
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        for (name, theirs) in zip(names, expected) {
            var bytes = Array(name.utf8)
            var actual = ""
            #expect(bytes.withUnsafeBytes { demangler.withDemangled(utf8: $0) { actual = String(decoding: $0, as: UTF8.self) } })
            #expect(actual == theirs, "\(name)")
            for size in [1, 16] {
                let small = bytes.withUnsafeBytes { raw in
                    SwiftRuntimeDemangler.withDemangled(raw, bufferSize: size) { actual = String(decoding: $0, as: UTF8.self) }
                }
                #expect(small && actual == theirs, "\(name) \(size)")
            }
            bytes.append(0)
            #expect(!bytes.withUnsafeBytes { demangler.withDemangled(utf8: $0) { _ in } }, "a NUL inside is refused")
        }
        for name in ["$s4main3fooyyFTf3p", "_$s4main3fooyyFTfq3eDGp"] {
            #expect(!Array(name.utf8).withUnsafeBytes { demangler.withDemangled(utf8: $0) { _ in } }, "\(name)")
        }
    }

    /// Older Swift manglings the runtime still reads (`_T0` from Swift 4, `$S` from Swift 4.2).
    @Test func olderManglings() throws {
        let names = ["_T0s20_ResilientHashingMap", "$S4main3fooyyF", "$s4main3fooyyF", "$e4main3fooyyF"]
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(Demangler.scheme(of: name) == .swift, "\(name)")
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
    }

    /// Every truncation of every real name gives what `swift-demangle` gives, and never traps.
    /// The names we refuse because they crash the runtime's demangler must crash the toolchain's
    /// `swift-demangle` too (it shares the code); all others are compared.
    @Test(.timeLimit(.minutes(5))) func truncatedNamesMatchSwiftDemangle() throws {
        let truncations = try Fixtures.truncations(of: "swift.txt").filter { $0.hasPrefix("$s") }
        var compared: [String] = []
        var refused: Set<String> = []
        for name in truncations {
            if demangler.demangle(name) == nil && Self.refusedBecauseOfRuntimeBug(name) {
                refused.insert(name)
            } else {
                compared.append(name)
            }
        }
        let expected = try ReferenceTool.swiftDemangle.demangle(compared)
        var fragments = 0
        for (name, theirs) in zip(compared, expected) {
            let ours = demangler.demangleOrSelf(name)
            // A name the runtime cannot read whole comes out as its parse tree's fragments run
            // together (`…unitSwift.Array<Swift.String>`); `swift-demangle` sugars a type there
            // even glued to a word, which our text rule refuses (a module `RxSwift` must not turn
            // `RxSwift.Array<A>` into `Rx[A]`). Such a name matches once those glued types are
            // sugared.
            let glued = /([A-Za-z0-9_])Swift\.(Array|Optional|Dictionary)<([^<>,]*)(?:, ([^<>]*))?>/
            if ours != theirs && ours.contains(glued) {
                let sugared = ours.replacing(glued) { match in
                    let (_, before, kind, argument, value) = match.output
                    switch kind {
                    case "Array": return "\(before)[\(argument)]"
                    case "Dictionary": return "\(before)[\(argument) : \(value ?? "")]"
                    default: return "\(before)\(argument)?"
                    }
                }
                #expect(sugared == theirs, "\(name)")
                fragments += 1
                continue
            }
            #expect(ours == theirs, "\(name)")
        }
        #expect(fragments < compared.count / 20)
        #expect(refused.count <= 5)
        for name in refused {
            #expect(try ReferenceTool.swiftDemangle.crashes(on: name), "\(name) refused but harmless")
        }
    }

    /// Names that crash Swift 6.3's demangler (a function signature specialization cut right
    /// after a constant-propagation tag) are refused: `nil`, not a crashed process. Each one is
    /// checked to really crash `swift-demangle`, and near-misses to demangle normally.
    @Test(.timeLimit(.minutes(5))) func runtimeCrashingNamesAreRefused() throws {
        let crashing = ["$s4main3fooyyFTf3p", "$s4main3fooyyFTf3npi1p", "_$s4main3fooyyFTfq3eDGp"]
        for name in crashing {
            #expect(demangler.demangle(name) == nil, "\(name)")
            #expect(try ReferenceTool.swiftDemangle.crashes(on: name), "\(name)")
        }
        let nearMisses = ["$s4main3fooyyFTf3pi1", "$s4main3fooyyFTf3n_p", "$s4main3fooyyFTf3p.x", "$s4main3fooyyFTf3pf"]
        let expected = try ReferenceTool.swiftDemangle.demangle(nearMisses)
        for (name, theirs) in zip(nearMisses, expected) {
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
    }

    /// Whether a name ends in a constant-propagation tag `p` of a `Tf` parameter list: the shape
    /// the runtime-bug guard refuses, recognised here by a looser textual rule.
    static func refusedBecauseOfRuntimeBug(_ name: String) -> Bool {
        name.hasSuffix("p") && name.contains("Tf")
    }
}

/// Swift names spelled as Swift's tools spell them (issue 19 item 6): `swift-demangle`'s type sugar
/// by default, the backtracer's short form on request.
@Suite struct SwiftNameStyleTests {
    /// Sugared types in every position `sugar.swift` puts them (nested, optional functions and
    /// compositions in parentheses, a constrained `Array` extension left spelled out) read as
    /// `swift-demangle` prints them, and differ from the runtime's unsugared text.
    @Test func sugarMatchesSwiftDemangle() throws {
        let names = try Fixtures.names("swift-sugar.txt")
        let expected = try ReferenceTool.swiftDemangle.demangle(names)
        let unsugared = try ReferenceTool.swiftDemangleNoSugar.demangle(names)
        var sugared = 0
        for ((name, theirs), plain) in zip(zip(names, expected), unsugared) {
            #expect(Demangler().demangleOrSelf(name) == theirs, "\(name)")
            if theirs != plain { sugared += 1 }
        }
        #expect(sugared >= 20, "the list exercises sugar")
        #expect(expected.contains { $0.contains("((Swift.Int) -> ())?") })
        #expect(expected.contains { $0.contains("Swift.Array<A where A: sugar.Named>") })
    }

    /// `--swift-names simplified` is the backtracer's form, which `swift-demangle --simplified`
    /// prints (both use the demangler's `SimplifiedUIDemangleOptions`): `Matrix.at(_:_:)`.
    @Test func simplifiedMatchesSwiftDemangleSimplified() throws {
        let names = try Fixtures.names("swift.txt") + Fixtures.names("swift-sugar.txt")
        let tool = ReferenceTool(path: ReferenceTool.swiftDemangle.path, arguments: ["--simplified", "--compact"],
                                 takesNamesAsArguments: true)
        let expected = try tool.demangle(names)
        let simplified = Demangler(swiftNames: .simplified)
        for (name, theirs) in zip(names, expected) {
            #expect(simplified.demangleOrSelf(name) == theirs, "\(name)")
        }
        #expect(simplified.demangle("$s5sugar6MatrixV2atySdSgSi_SitF") == "Matrix.at(_:_:)")
    }

    /// The sugar rule's edge cases, on text alone: an optional of a function or a composition gets
    /// parentheses, a module whose name ends in `Swift` is not the standard library, and text that
    /// does not balance is left as it is.
    @Test(arguments: [
        ("Swift.Optional<(Swift.Int) -> Swift.Int>", "((Swift.Int) -> Swift.Int)?"),
        ("Swift.Optional<A & B>", "(A & B)?"),
        ("Swift.Dictionary<Swift.String, Swift.Array<Swift.Optional<Swift.Int>>>", "[Swift.String : [Swift.Int?]]"),
        ("Swift.ImplicitlyUnwrappedOptional<Swift.Int>", "Swift.Int!"),
        ("RxSwift.Array<Swift.Int>", "RxSwift.Array<Swift.Int>"),
        ("f(Swift.Array<Swift.Int)", "f(Swift.Array<Swift.Int)"),
        ("static Swift.Int.< infix(Swift.Optional<Swift.Int>) -> Swift.Bool", "static Swift.Int.< infix(Swift.Int?) -> Swift.Bool"),
        ("Swift.Array<A where A: P>.f()", "Swift.Array<A where A: P>.f()"),
    ])
    func sugarRule(input: String, expected: String) {
        #expect(String(decoding: SwiftTypeSugar.sugar(Array(input.utf8)), as: UTF8.self) == expected)
    }
}
