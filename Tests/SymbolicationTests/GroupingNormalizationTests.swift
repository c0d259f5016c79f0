import Foundation
import Testing
import TestSupport
@testable import Symbolication

/// Function-name normalisation and the pattern language of the grouping rules.
@Suite struct GroupingNormalizationTests {
    @Test("the remembered normalisation answers what normalisation does, across slot collisions and mangled kinds")
    func rememberedNormalisation() {
        // More names than the table has slots, twice over: hits, misses and evictions.
        var names: [(String, String?)] = Self.sameFunction.flatMap { [($0.0, $0.2), ($0.1, $0.2)] }
        for index in 0..<10_000 {
            names.append(("ns::Parser<\(index)>::parse(int) [clone .isra.\(index % 7)]", nil))
            // One spelling with two mangled kinds: the answer depends on the kind, never on the slot.
            names.append(("int compute<\(index)>", "_Z7computeIiEiT_"))
            names.append(("int compute<\(index)>", nil))
            names.append(("closure #1 (Swift.Int) -> () in m\(index).run() -> ()", index % 3 == 0 ? "$s4main3runyyF" : "_Z3runv"))
        }
        // The kind matters (a C++ return type goes only when the name is mangled C++): a table
        // keyed by the name alone would answer one kind with the other's normalisation.
        #expect(FunctionNameNormalizer.normalize("int compute<1>", mangled: "_Z7computeIiEiT_")
                != FunctionNameNormalizer.normalize("int compute<1>", mangled: nil))
        for _ in 0..<2 {
            for (function, mangled) in names {
                #expect(FunctionNameNormalizer.normalizeRemembered(function, mangled: mangled)
                        == FunctionNameNormalizer.normalize(function, mangled: mangled), "\(function) \(mangled ?? "-")")
            }
        }
    }

    /// Pairs of names that must read the same in a signature, each pair one difference between
    /// compilers, optimisers or builds (docs/grouping.md "Normalisation").
    static let sameFunction: [(String, String, String?)] = [
        // Compiler clones and split functions.
        ("parse_header.constprop.0", "parse_header", nil),
        ("parse_header.isra.0", "parse_header", nil),
        ("parse_header.part.3", "parse_header", nil),
        ("parse_header.cold", "parse_header", nil),
        ("parse_header.isra.0.cold", "parse_header", nil),
        ("parse_header.lto_priv.0", "parse_header", nil),
        ("parse_header.llvm.1234567890", "parse_header", nil),
        ("ns::Parser::parse(int) [clone .constprop.0]", "ns::Parser::parse", nil),
        ("ns::Parser::parse(int) [clone .isra.0] [clone .cold]", "ns::Parser::parse", nil),
        // Parameter lists only one compiler's debug info carries, qualifiers, return types.
        ("ns::Parser::parse(char const*, unsigned long) const", "ns::Parser::parse", "_ZNK2ns6Parser5parseEPKcm"),
        ("int compute<int>(int)", "compute<int>", "_Z7computeIiEiT_"),
        ("outer(int)::{lambda(int)#1}::operator()(int) const", "outer::{lambda(int)#1}::operator()", nil),
        ("ns::Foo::bar() &&", "ns::Foo::bar", nil),
        ("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::size() const",
         "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>>::size", nil),
        ("ns::name[abi:cxx11]() const", "ns::name", nil),
        // Rust: legacy hashes and v0 crate disambiguators.
        ("app::parse::h0123456789abcdef", "app::parse", nil),
        ("app[5a1b2c3d4e]::parse", "app::parse", nil),
        // Swift: parameters, labels and return types; specialisations are the generic function.
        ("crash.lookUp(_: Swift.String, in: Swift.Dictionary<Swift.String, Swift.Int>) -> Swift.Int", "crash.lookUp", "$s5crash6lookUp"),
        ("generic specialization <Swift.Int> of crash.total<A>(A) -> Swift.Int", "crash.total<A>", "$s5crash5totalyS2iSgF"),
        ("crash.load() async throws -> ()", "crash.load", "$s5crash4loadyyYaKF"),
        // glibc's CPU-specific variants.
        ("__memmove_avx_unaligned_erms", "memmove", nil),
        ("__strlen_evex", "strlen", nil),
        ("__strlen_sse2", "strlen", nil),
        ("__memcpy_sse2_unaligned", "memcpy", nil),
        ("__strchr_avx2_rtm", "strchr", nil),
    ]

    @Test(arguments: 0..<sameFunction.count)
    func normalisesToTheSameName(_ index: Int) {
        let (name, expected, mangled) = Self.sameFunction[index]
        #expect(FunctionNameNormalizer.normalize(name, mangled: mangled) == expected, "\(name)")
    }

    /// What normalisation must keep apart.
    @Test func keepsWhatNamesAFunction() {
        let keep: [(String, String?)] = [
            ("(anonymous namespace)::helper", nil), ("ns::Foo::operator()", nil), ("Foo::~Foo", nil),
            ("ns::Widget::operator<", nil), ("ns::Widget::operator<<", nil), ("operator new", nil), ("operator delete[]", nil),
            ("crash.main", nil), ("closure #1 in crash.run", "$s5crash3runyyFyycfU_"), ("__GI_raise", nil), ("__libc_start_main", nil),
            ("<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop", nil), ("std::vector<int>::operator[]", nil), ("main", nil),
            ("gfx_copy", nil), ("__asan_memcpy", nil),
        ]
        for (name, mangled) in keep {
            #expect(FunctionNameNormalizer.normalize(name, mangled: mangled) == name, "\(name)")
        }
        #expect(FunctionNameNormalizer.normalize("(anonymous namespace)::helper(int)") == "(anonymous namespace)::helper")
        #expect(FunctionNameNormalizer.normalize("ns::Widget::operator<(ns::Widget const&) const") == "ns::Widget::operator<")
        #expect(FunctionNameNormalizer.normalize("closure #1 (Swift.Int) -> () in crash.run() -> ()", mangled: "$s5crash3runyyFyycfU_")
            == "closure #1 in crash.run")
        // Different functions stay different.
        #expect(FunctionNameNormalizer.normalize("ns::a(int)") != FunctionNameNormalizer.normalize("ns::b(int)"))
        #expect(FunctionNameNormalizer.normalize("app::parse::h0123456789abcdef") != FunctionNameNormalizer.normalize("app::load::h0123456789abcdef"))
    }

    /// Mozilla Socorro's C++ normalisation (PyPI `siggen`, run as a child process) as an oracle:
    /// on names without templates and clone suffixes, where its conventions are ours, it must
    /// agree; with templates, after its `<T>` collapse.
    @Test func agreesWithSocorrosNormalisation() throws {
        let names = [
            "ns::Parser::parse(char const*, unsigned long) const", "int compute(int)", "(anonymous namespace)::helper(int)",
            "foo::operator()(int) const", "Foo::~Foo()", "void ns::run(int (*)(int))", "ns::Widget::operator==(ns::Widget const&) const",
            "unsigned long ns::size(ns::Buffer const&)", "ns::Foo::bar() &&", "gfx_copy", "validate_order", "ns::Foo::Foo(int, int)",
            "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(int const&)",
            "std::unique_ptr<ns::Node, std::default_delete<ns::Node> >::~unique_ptr()", "ns::Cache<std::string>::get(std::string const&)",
            "ns::Table<int, 4>::find(int) const", "void ns::visit<ns::Node*>(ns::Node*, void (*)(ns::Node*))",
        ]
        let script = """
        import json, sys
        from siggen.rules import CSignatureTool
        tool = CSignatureTool()
        print(json.dumps([tool.normalize_cpp_function(name, 0) for name in json.loads(sys.stdin.read())]))
        """
        let run = try Tool.run("/usr/bin/env", ["python3", "-c", script], input: try JSONEncoder().encode(names))
        #expect(run.status == 0, "siggen is not installed (scripts/deps test installs it): \(run.stderr)")
        let socorro = try JSONDecoder().decode([String].self, from: run.stdout)
        try #require(socorro.count == names.count)
        for (name, theirs) in zip(names, socorro) {
            let ours = Self.collapseTemplates(FunctionNameNormalizer.normalize(name))
            #expect(ours == theirs, "\(name)")
        }
    }

    /// Socorro's `collapse(…, "<", ">", "<T>")`, outside `operator<`.
    static func collapseTemplates(_ name: String) -> String {
        var out = "", depth = 0
        var characters = Array(name)[...]
        while let character = characters.popFirst() {
            if out.hasSuffix("operator") && (character == "<" || character == "=") && depth == 0 {
                out.append(character)
                while let next = characters.first, "<=>".contains(next) { out.append(next); characters.removeFirst() }
                continue
            }
            if character == "<" { if depth == 0 { out += "<T>" }; depth += 1; continue }
            if character == ">" && depth > 0 { depth -= 1; continue }
            if depth == 0 { out.append(character) }
        }
        return out
    }

    /// Hostile names: long, deep, unbalanced, only dots. Normalising never traps and stays short.
    @Test func hostileNames() {
        let names = [
            String(repeating: "(", count: 10_000), String(repeating: ")", count: 10_000), String(repeating: "<", count: 10_000),
            String(repeating: ".0", count: 10_000), String(repeating: " [clone .cold]", count: 2_000), String(repeating: "a::", count: 5_000),
            "operator", "operator(", "f(", "[", "[abi:", " -> ", "__", "___", "\u{0}", "é(ü)", "",
            String(repeating: "operator()", count: 1_000), String(repeating: "x", count: 100_000) + "(int)",
        ]
        for name in names {
            let normalised = FunctionNameNormalizer.normalize(name)
            #expect(normalised.utf8.count <= FunctionNameNormalizer.maximumLength)
        }
    }

    // MARK: Patterns

    @Test func patternSemantics() throws {
        let cases: [(String, String, Bool)] = [
            ("abort", "abort", true), ("abort", "abort2", false), ("abort", "xabort", false),
            ("__GI_*", "__GI_raise", true), ("__GI_*", "__GI_", true), ("__GI_*", "_GI_raise", false),
            ("*::panicking::*", "std::panicking::begin_panic", true), ("*::panicking::*", "core::panic", false),
            ("*", "", true), ("*", "anything", true), ("lib?.so", "libc.so", true), ("lib?.so", "libcc.so", false),
            ("a*b*c", "abc", true), ("a*b*c", "aXbYc", true), ("a*b*c", "acb", false), ("a*a", "a", false), ("a*a", "aa", true),
            (#"literal\*"#, "literal*", true), (#"literal\*"#, "literalX", false), ("libc.so*", "libc.so.6", true),
        ]
        for (pattern, name, expected) in cases {
            let compiled = try #require(GlobPattern(pattern), "\(pattern)")
            #expect(compiled.matches(name) == expected, "\(pattern) ~ \(name)")
        }
        for invalid in ["", "trailing\\", "tab\there", String(repeating: "a", count: GlobPattern.maximumLength + 1)] {
            #expect(GlobPattern(invalid) == nil, "\(invalid.prefix(20))")
        }
    }

    /// The leftmost-segment matcher equals a naive backtracking matcher on random patterns.
    @Test func patternsAgreeWithANaiveMatcher() throws {
        var random = SplitMix64(seed: 0x6772_6f75_70)
        let alphabet: [Character] = ["a", "b", "*", "?"]
        for _ in 0..<20_000 {
            let pattern = String((0..<random.int(1...7)).map { _ in alphabet[random.int(0...3)] })
            let name = String((0..<random.int(0...8)).map { _ in alphabet[random.int(0...1)] })
            let compiled = try #require(GlobPattern(pattern))
            #expect(compiled.matches(name) == Self.naive(Array(pattern.utf8)[...], Array(name.utf8)[...]), "\(pattern) ~ \(name)")
        }
    }

    static func naive(_ pattern: ArraySlice<UInt8>, _ name: ArraySlice<UInt8>) -> Bool {
        guard let first = pattern.first else { return name.isEmpty }
        if first == UInt8(ascii: "*") {
            return naive(pattern.dropFirst(), name) || (!name.isEmpty && naive(pattern, name.dropFirst()))
        }
        guard let head = name.first else { return false }
        return (first == UInt8(ascii: "?") || first == head) && naive(pattern.dropFirst(), name.dropFirst())
    }
}
