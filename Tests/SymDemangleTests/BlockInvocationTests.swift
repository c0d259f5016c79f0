import SymDemangle
import Testing

/// Clang's names of blocks' invocation functions (`___Z…_block_invoke[_N]`) go to the C++
/// demangler and print as `llvm-cxxfilt` prints them (`invocation function for block in foo()`;
/// GNU `c++filt` leaves them as they are). The expected lines are the oracle's, run here on the
/// same names, in the two spellings crashsym reads: ELF's (`llvm-cxxfilt`), and where that
/// leaves a name as it is, Mach-O's with one more underscore (`llvm-cxxfilt -_`).
@Suite struct BlockInvocationTests {
    static let names = [
        "___Z3foov_block_invoke", "___Z3foov_block_invoke_2", "___Z3foov_block_invoke_12", "___ZN1A1fEv_block_invoke_3",
        "___ZN5outer3runIiEEvT__block_invoke", "___Z3foov_block_invoke.cold",
        "___Z3foo_block_invoke",
        "___ZZ4mainENK3$_0clEv_block_invoke", "____Z3foov_block_invoke", "____ZN1A1fEv_block_invoke_2",
        // Not blocks LLVM reads: left as they are.
        "__Z3foov_block_invoke", "_Z3foov_block_invoke", "___Z3foov", "___Z3foov_block_invoke_", "___Z3foov_block_invokeX",
        "___Z", "___Z_block_invoke", "_____Z3foov_block_invoke",
    ]

    /// What `llvm-cxxfilt` prints for each name, in the first spelling that demangles it.
    static func expected() throws -> [String] {
        let elf = try ReferenceTool.llvmCxxfilt.demangle(names)
        let machO = try ReferenceTool(path: ReferenceTool.llvmCxxfilt.path, arguments: ["-_"]).demangle(names)
        return zip(names, zip(elf, machO)).map { name, answers in answers.0 != name ? answers.0 : answers.1 }
    }

    @Test("each name demangles as llvm-cxxfilt prints it, and is C++ to --format json")
    func demangledAsLLVMPrintsThem() throws {
        let expected = try Self.expected()
        // The oracle reads the blocks (not a list of names it leaves alone).
        #expect(expected.filter { $0.hasPrefix("invocation function for block in ") }.count == 10, "\(expected)")
        let demangler = Demangler()
        for (name, answer) in zip(Self.names, expected) {
            #expect(demangler.demangleOrSelf(name) == answer, "\(name)")
            if answer != name {
                #expect(Demangler.scheme(of: name) == .itanium, "\(name)")
                #expect(TextDemangler.language(of: name) == "c++", "\(name)")
            }
        }
    }

    @Test("in free text each name is replaced as on its own")
    func replacedInText() throws {
        let expected = try Self.expected()
        let filter = TextDemangler()
        for (name, answer) in zip(Self.names, expected) {
            #expect(filter.demangleText("#3 0x1234 in \(name) (libapp.so+0x1234)\n") == "#3 0x1234 in \(answer) (libapp.so+0x1234)\n",
                    "\(name)")
        }
    }
}
