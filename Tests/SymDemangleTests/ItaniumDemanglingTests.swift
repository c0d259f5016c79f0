import Foundation
import SymDemangle
import Testing

/// C++ names against GNU `c++filt`. Our C++ path is libstdc++'s `__cxa_demangle`, which shares
/// libiberty's demangler with `c++filt`: what these tests check is our side of it (which names go
/// there, prefixes, clone suffixes, ownership of the result), not the demangler itself.
/// `llvm-cxxfilt-14` is not used: it spells lambdas, clone suffixes and generic lambda parameters
/// its own way.
@Suite struct ItaniumDemanglingTests {
    let demangler = Demangler()

    /// Hand-written clone suffixes GCC emits, in addition to those in `cxx.txt`.
    static let cloneSuffixed = [
        "_Z3fooi.part.1", "_Z3fooi.isra.0.cold", "_ZN3foo3barEv.constprop.0", "_ZN3foo3barEv.cold",
        "_Z3fooi.isra.0.part.1", "_ZN9__gnu_cxx3foo3barEv.lto_priv.0",
    ]

    /// Every name from the compiled C++ program (and the hand-written clones) demangles exactly as
    /// `c++filt` prints it, including `[clone .cold]`-style suffixes.
    @Test func matchesCxxfilt() throws {
        let names = try Fixtures.names("cxx.txt") + Self.cloneSuffixed
        let expected = try ReferenceTool.gnuCxxfilt.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(Demangler.scheme(of: name) == .itanium, "\(name)")
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
        // The fixture really has GCC's clones and real C++ in it.
        for suffix in [".cold", ".isra.0", ".constprop.0"] {
            #expect(names.contains { $0.hasSuffix(suffix) && demangler.demangle($0) != nil }, "\(suffix)")
        }
    }

    /// Mach-O spells `_Z` as `__Z`; both demangle the same.
    @Test func machOUnderscore() throws {
        for name in try Fixtures.names("cxx.txt") {
            #expect(Demangler.scheme(of: "_" + name) == .itanium)
            #expect(demangler.demangle("_" + name) == demangler.demangle(name), "\(name)")
        }
    }

    /// A Rust-looking path without the hash element is an ordinary C++ nested name.
    @Test func hashlessNestedNameIsCxx() throws {
        let names = ["_ZN3foo3barE", "_ZN4core3ptr13drop_in_place17h1234567890abcdeE", "_ZN3foo17h1234567890abcdefEv"]
        let expected = try ReferenceTool.gnuCxxfilt.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(Demangler.scheme(of: name) == .itanium, "\(name)")
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
    }

    /// Every truncation of every real name gives what `c++filt` gives (it echoes what it cannot
    /// demangle), and never traps. Names with a symbol version (`@GLIBCXX_3.4`) are left out:
    /// cut inside the version they test `c++filt`'s splitting of text into words, not demangling.
    @Test(.timeLimit(.minutes(5))) func truncatedNamesMatchCxxfilt() throws {
        let truncations = try Fixtures.truncations(of: "cxx.txt").filter { $0.hasPrefix("_Z") && !$0.contains("@") }
        let expected = try ReferenceTool.gnuCxxfilt.demangle(truncations)
        for (name, theirs) in zip(truncations, expected) {
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
    }
}

/// C++ names newer than GCC 12's `__cxa_demangle`, which crashsym used before: C++23 extended
/// floating-point types from the toolchain's clang (`cxx-current.txt`, built by generate.sh), the
/// `_FloatNx` spellings clang does not emit, and ThinLTO/rustc `.llvm.<HEX>` suffixes.
@Suite struct CurrentItaniumTests {
    let demangler = Demangler()

    /// Everything in `cxx-current.txt` demangles as the installed `c++filt` (binutils 2.40)
    /// prints it: `std::bfloat16_t` for `DF16b` (GCC 12 said `bool _Accum`), `_Float16`.
    @Test func currentNamesMatchCxxfilt() throws {
        let names = try Fixtures.names("cxx-current.txt") + ["_Z3fooDF32x", "_Z3fooDF64_", "_Z3fooDF128x", "_Z3xxxDF16b"]
        let expected = try ReferenceTool.gnuCxxfilt.demangle(names)
        for (name, theirs) in zip(names, expected) {
            #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
        }
        #expect(demangler.demangle("_Z3xxxDF16b") == "xxx(std::bfloat16_t)")
        #expect(demangler.demangle("_Z3fooDF32x") == "foo(_Float32x)")
        #expect(names.filter { $0.contains("DF16b") }.count >= 3, "the compiled program has bfloat16 names")
    }

    /// An upper-case hex `.llvm.` hash reads as libiberty reads a decimal one
    /// (`foo() [clone .llvm.123]`): the name before it demangled, the suffix kept whole.
    @Test func upperCaseLLVMSuffix() throws {
        let names = try Fixtures.names("cxx-llvm-suffix.txt")
        let expected = try ReferenceTool.gnuCxxfilt.demangle(names)
        var upperCase = 0
        for (name, theirs) in zip(names, expected) {
            guard let match = name.wholeMatch(of: /(.*)\.llvm\.([0-9A-F]*[A-F][0-9A-F]*)/) else {
                #expect(demangler.demangleOrSelf(name) == theirs, "\(name)")
                continue
            }
            // c++filt's answer for the same name with a decimal hash, with the hash put back.
            let (_, head, hash) = match.output
            let decimal = try ReferenceTool.gnuCxxfilt.demangle([head + ".llvm.0"])[0]
            #expect(decimal.hasSuffix(" [clone .llvm.0]"))
            #expect(demangler.demangle(name) == decimal.dropLast(" [clone .llvm.0]".count) + " [clone .llvm.\(hash)]", "\(name)")
            upperCase += 1
        }
        #expect(upperCase >= 3)
        #expect(demangler.demangle("_ZN3fooEv.llvm.9D1C9369") == "foo() [clone .llvm.9D1C9369]")
    }

    /// `--no-params` reads as `c++filt -p`.
    @Test func withoutParametersMatchesCxxfiltP() throws {
        let names = try Fixtures.names("cxx.txt") + Fixtures.names("cxx-current.txt")
        let expected = try ReferenceTool(path: "/usr/bin/c++filt", arguments: ["-p"]).demangle(names)
        let noParameters = Demangler(parameters: false)
        for (name, theirs) in zip(names, expected) {
            #expect(noParameters.demangleOrSelf(name) == theirs, "\(name)")
        }
    }
}
