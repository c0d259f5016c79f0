import SymDemangle
import Testing

/// Scheme detection and the behaviour on names no scheme claims.
@Suite struct SchemeTests {
    let demangler = Demangler()

    /// Plain C and assembler names, and near-misses of each prefix, are not mangled.
    @Test(arguments: [
        "main", "malloc", "_start", "__libc_start_main", "_GLOBAL_OFFSET_TABLE_", "__cxa_finalize",
        "_init", "_Z", "__Z", "_R", "_Rfoo", "_R0NvC1a1f", "$", "_T", "", "ZN3foo3barE", "_ZZ",
        "rust_begin_unwind", "$x.1", ".Ltmp0",
    ])
    func unmangledNames(name: String) {
        if name.hasPrefix("_Z") || name.hasPrefix("__Z") {
            #expect(Demangler.scheme(of: name) == .itanium)
        } else {
            #expect(Demangler.scheme(of: name) == .none)
        }
        #expect(demangler.demangle(name) == nil)
        #expect(demangler.demangleOrSelf(name) == name)
    }

    /// Each fixture list is recognised as its scheme as a whole.
    @Test(arguments: [
        ("rust-legacy.txt", ManglingScheme.rustLegacy), ("rust-v0.txt", .rustV0), ("cxx.txt", .itanium),
        ("swift.txt", .swift),
    ])
    func fixtureLists(list: String, scheme: ManglingScheme) throws {
        let names = try Fixtures.names(list)
        #expect(!names.isEmpty)
        for name in names {
            #expect(Demangler.scheme(of: name) == scheme, "\(name)")
            #expect(demangler.demangle(name) != nil, "\(name)")
        }
    }

    /// A legacy Rust name is recognised by its hash even with LLVM's and GCC's suffixes after it,
    /// and not when the hash is malformed or something other than a `.suffix` follows.
    @Test(arguments: [
        ("_ZN3foo3bar17h0123456789abcdefE", ManglingScheme.rustLegacy),
        ("_ZN3foo3bar17h0123456789abcdefE.llvm.12AB", .rustLegacy),
        ("_ZN3foo3bar17h0123456789abcdefE.cold.1", .rustLegacy),
        ("__ZN3foo3bar17h0123456789abcdefE", .rustLegacy),
        ("_ZN3foo3bar17h0123456789ABCDEFE", .itanium),
        ("_ZN3foo3bar16h0123456789abcdeE", .itanium),
        ("_ZN3foo3bar17h0123456789abcdefEv", .itanium),
        ("_ZN17h0123456789abcdefE", .itanium),
        ("_ZN3foo3bar17h0123456789abcdefE moo", .itanium),
    ])
    func legacyRecognition(name: String, scheme: ManglingScheme) {
        #expect(Demangler.scheme(of: name) == scheme)
    }

    /// Names longer than the limit are refused before any demangler sees them.
    @Test func overlongNamesAreRefused() {
        let long = "_ZN" + String(repeating: "3foo", count: Demangler.maximumNameLength / 4) + "17h0123456789abcdefE"
        #expect(Demangler.scheme(of: long) == .rustLegacy)
        #expect(demangler.demangle(long) == nil)
    }
}
