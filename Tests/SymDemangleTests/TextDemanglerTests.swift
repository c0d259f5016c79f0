import Foundation
@testable import SymDemangle
import Testing

/// `crashsym demangle`'s filter: mangled names found in free text and replaced in place, for C++,
/// Swift and Rust at once, each checked against its own language's tool.
@Suite struct TextDemanglerTests {
    let filter = TextDemangler()

    /// Every name of every compiled list, inside a line of a typical backtrace, comes out as its
    /// own language's reference tool demangles it, with the text around it untouched.
    @Test func namesInTextMatchEachLanguagesTool() throws {
        var names: [String] = []
        var expected: [String] = []
        // `@VERSION` is not part of a name (it stays as text after it): names without it.
        let cxx = try Array(Set((Fixtures.names("cxx.txt") + Fixtures.names("cxx-current.txt")).map { Self.splitVersion($0).0 }))
        names += cxx
        expected += try ReferenceTool.gnuCxxfilt.demangle(cxx)
        let swift = try Fixtures.names("swift.txt") + Fixtures.names("swift-sugar.txt")
        names += swift
        expected += try ReferenceTool.swiftDemangle.demangle(swift)
        let rust = try Fixtures.names("rust-legacy.txt") + Fixtures.names("rust-v0.txt")
        names += rust
        expected += try ReferenceTool.rustcDemangle().demangle(rust).enumerated().map { index, line in
            ReferenceTool.isRustcFailure(line) ? rust[index] : line
        }
        for (index, (name, theirs)) in zip(names, expected).enumerated() {
            let line = "#\(index) 0x00007f00 in \(name)@@GLIBCXX_3.4+0x1c (/usr/lib/libx.so)."
            let want = "#\(index) 0x00007f00 in \(theirs)@@GLIBCXX_3.4+0x1c (/usr/lib/libx.so)."
            #expect(filter.demangleText(line) == want, "\(name)")
        }
        #expect(names.count > 1700)
        #expect(expected.contains { $0.contains("std::bfloat16_t") } && expected.contains { $0.contains("[Swift.String]") })
    }

    /// On C++ alone, whole lines read exactly as `c++filt` prints its standard input.
    @Test func cxxLinesMatchCxxfiltFiltering() throws {
        let lines = try Fixtures.names("cxx.txt").filter { !$0.contains("@") }.map { "call \($0)(0x10) from [\($0)]" }
        let expected = try ReferenceTool.gnuCxxfilt.demangle(lines)
        for (line, theirs) in zip(lines, expected) {
            #expect(filter.demangleText(line) == theirs, "\(line)")
        }
    }

    /// Text without names is copied byte for byte; a name glued to a word, or cut short, is left.
    @Test(arguments: [
        ("no names here, just text.", "no names here, just text."),
        ("x_Z3foov and _Z3foov.", "x_Z3foov and foo()."),
        ("$s4main3fooyyF,_ZN3foo3barEv;_RNvCs1234_5krate3fun", "main.foo() -> (),foo::bar();krate::fun"),
        ("_Z3fo", "_Z3fo"),
        ("caf\u{e9} _Z3foov \u{1F600}", "caf\u{e9} foo() \u{1F600}"),
        ("", ""),
        ("_Z", "_Z"),
        ("....$s", "....$s"),
    ])
    func plainText(input: String, expected: String) {
        #expect(filter.demangleText(input) == expected)
    }

    /// A name and its `@VERSION`/`@@VERSION` tail.
    static func splitVersion(_ name: String) -> (String, String) {
        guard let at = name.firstIndex(of: "@") else { return (name, "") }
        return (String(name[..<at]), String(name[at...]))
    }
}
