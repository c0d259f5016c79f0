import Foundation
import TestSupport
import Testing

/// The drop-ins' less common flags against the real tools: llvm-symbolizer's `--adjust-vma`,
/// `--print-source-context-lines` and its refusal of unknown options; binutils addr2line's
/// `-j`, `-b`, `-r`/`-R` and `-v`.
@Suite struct DropInFlagTests {
    static let fixture = CLI.fixture("gcc-c-O2-dwarf5")

    /// `--adjust-vma=OFFSET`: addresses are looked up OFFSET lower and printed as given, in every
    /// output style and for CODE and DATA, as llvm-symbolizer 21 does.
    @Test(arguments: [[], ["-a"], ["-p", "-a"], ["--output-style=JSON"], ["--no-inlines", "-a"]])
    func adjustVMAMatchesLLVMSymbolizer(flags: [String]) throws {
        let addresses = try DropIn.functionAddresses(Self.fixture, stride: 7)
        let objects = try DropIn.dataObjects(Self.fixture)
        for offset: UInt64 in [0x1000, 0x7f00_0000_0000] {
            var lines = addresses.map { "CODE \(Self.fixture) \(DropIn.hex($0 + offset))" }
            // DATA in JSON only: in LLVM style llvm adds the variable's declaration line from DWARF,
            // which the tables do not keep (DropInTests' DATA test).
            if flags.contains("--output-style=JSON") { lines += objects.map { "DATA \(Self.fixture) \(DropIn.hex($0.0 + offset))" } }
            lines.append("CODE \(Self.fixture) 0x5")  // below the offset: wraps, as in llvm
            let input = lines.joined(separator: "\n") + "\n"
            let arguments = ["--adjust-vma=" + DropIn.hex(offset)] + flags
            let expected = try DropIn.run(DropIn.llvmSymbolizer, arguments, input: input)
            let actual = try CLI.run(["llvm-symbolizer"] + arguments, input: input)
            #expect(actual.status == 0 && expected.status == 0)
            let wanted = Self.withoutStart(expected.stdout), got = Self.withoutStart(actual.stdout)
            #expect(got == wanted, "\(flags) \(DropIn.hex(offset)):\n\(DropIn.differences(wanted.split(separator: "\n"), got.split(separator: "\n")))")
            #expect(addresses.count > 20)
        }
        // The value also comes as the next argument.
        let input = "\(Self.fixture) \(DropIn.hex(addresses[3] + 0x1000))\n"
        #expect(Self.withoutStart(try CLI.run(["llvm-symbolizer", "--adjust-vma", "0x1000"] + flags, input: input).stdout)
                == Self.withoutStart(try DropIn.run(DropIn.llvmSymbolizer, ["--adjust-vma", "0x1000"] + flags, input: input).stdout))
    }

    /// A program built here, so its DWARF names a source file that exists: the context lines.
    static func programWithSource() throws -> (directory: String, binary: String) {
        let directory = try CLI.temporaryDirectory()
        let source = """
            #include <stdio.h>

            static inline __attribute__((always_inline)) int twice(int x) {
                return x * 2;
            }

            __attribute__((noinline)) int compute(int x) {
                int y = twice(x);
                printf("%d\\n", y);\r
                return y + 1;
            }

            int main(int argc, char **argv) {
                return compute(argc);
            }
            """
        try source.write(toFile: directory + "/t.c", atomically: true, encoding: .utf8)
        // Built where it lies, as a project builds its sources (the line table names `t.c` under
        // the compilation directory).
        let build = try Tool.run(DropIn.clang, ["-g", "-O1", "-Wl,--build-id=sha1", "t.c", "-o", "t"],
                                 directory: URL(fileURLWithPath: directory))
        guard build.status == 0 else { throw CLI.DumpFailed(description: "clang: \(build.stderr)") }
        return (directory, directory + "/t")
    }

    @Test func sourceContextLinesMatchLLVMSymbolizer() throws {
        let (directory, binary) = try Self.programWithSource()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let addresses = try DropIn.functionAddresses(binary, stride: 1)
        let input = addresses.map { "\(binary) \(DropIn.hex($0))" }.joined(separator: "\n")
            + "\nDATA \(binary) \(DropIn.hex(addresses[0]))\n/nonexistent 0x10\n"
        var compared = 0
        for lines in ["0", "1", "2", "3", "4", "9", "30", "-2"] {
            for flags in [[], ["-a"], ["-p", "-a"], ["--output-style=JSON"], ["--no-inlines"], ["-s"], ["--functions=none"]] {
                let arguments = ["--print-source-context-lines=" + lines] + flags
                // Both run where the program was built: its line table names `t.c` relative to there.
                let here = URL(fileURLWithPath: directory)
                let expected = Self.withoutStart(try Tool.run(DropIn.llvmSymbolizer, arguments, input: Data(input.utf8), directory: here).text)
                let actual = Self.withoutStart(try Tool.run(CLI.binary, ["llvm-symbolizer"] + arguments, input: Data(input.utf8), directory: here).text)
                #expect(actual == expected, "\(arguments):\n\(DropIn.differences(expected.split(separator: "\n"), actual.split(separator: "\n")))")
                if lines == "3" && flags.isEmpty { #expect(actual.contains(" 9  :     printf(\"%d\\n\", y);\n10 >:     return y + 1;\n")) }
                compared += 1
            }
        }
        #expect(compared == 56)
    }

    /// JSON answers without the members the tables do not keep (`Start…` in part, discriminators;
    /// see DropInTests), whatever the source context and the address adjustment.
    static func withoutStart(_ text: String) -> String {
        text.replacingOccurrences(of: #","StartAddress":"[^"]*","StartFileName":"[^"]*","StartLine":[0-9]+"#, with: "",
                                  options: .regularExpression)
            .replacingOccurrences(of: #""Discriminator":[0-9]+"#, with: #""Discriminator":0"#, options: .regularExpression)
    }

    /// Options llvm-symbolizer does not know (or values it refuses) stop it before any answer:
    /// status 1, each one said on stderr in llvm's words.
    @Test(arguments: [
        ["--frobnicate"], ["-Z"], ["--frob", "--zz"], ["-fz"], ["-obj=prog"], ["--inlines=false"], ["-s=short"],
        ["--use-symbol-table=true"], ["--adjust-vma=zz"], ["--adjust-vma=-1"], ["--print-source-context-lines=x"],
        ["--cache-size=x"], ["--"], ["--adjust-vma"],
    ])
    func unknownOptionsAreRefusedAsLLVMRefusesThem(arguments: [String]) throws {
        // No input: both stop before reading it (writing it would meet a closed pipe).
        let expected = try DropIn.run(DropIn.llvmSymbolizer, arguments)
        let actual = try CLI.run(["llvm-symbolizer"] + arguments)
        #expect(expected.status == 1 && actual.status == 1)
        #expect(actual.stdout.isEmpty && expected.stdout.isEmpty)
        // llvm ends some of these messages without a newline; ours always ends its lines.
        let theirs = expected.stderr.hasSuffix("\n") ? expected.stderr : expected.stderr + "\n"
        #expect(actual.stderr == theirs)
    }

    /// Spellings llvm accepts are still accepted, with the same answers.
    @Test(arguments: [["-demangle=false"], ["-e", fixture], ["-e" + fixture], ["-e=" + fixture], ["-Cfi"], ["--inlining=false"],
                      ["--color=never", "--dia", "--skip-line-zero"].filter { $0 != "--skip-line-zero" }, ["-aps"]])
    func llvmSpellingsAreAccepted(arguments: [String]) throws {
        let object = arguments.contains { $0.hasPrefix("-e") }
        let input = (object ? "" : "\(Self.fixture) ") + "0x1390\n"
        let expected = try DropIn.run(DropIn.llvmSymbolizer, arguments, input: input)
        let actual = try CLI.run(["llvm-symbolizer"] + arguments, input: input)
        #expect(expected.status == 0 && actual.status == 0, "\(actual.stderr)")
        #expect(actual.stdout == expected.stdout)
    }

    /// addr2line `-j SECTION`: addresses are offsets into the section (nothing past its end),
    /// printed as given with `-a`; as binutils does.
    @Test(arguments: [["-f"], ["-a", "-f", "-i"], ["-a", "-p", "-f"]])
    func addr2lineSectionOffsetsMatchBinutils(flags: [String]) throws {
        // Offsets of addresses inside functions (DropInAddr2lineTests compares those), and past the end.
        let sections = try DropIn.run("/usr/bin/readelf", ["-SW", Self.fixture]).stdout
        let text = try #require(sections.split(separator: "\n").first { $0.contains(" .text ") })
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        let start = try #require(fields.firstIndex(of: ".text").flatMap { UInt64(fields[$0 + 2], radix: 16) })
        let size = try #require(fields.firstIndex(of: ".text").flatMap { UInt64(fields[$0 + 4], radix: 16) })
        let inside = try DropIn.functionAddresses(Self.fixture, stride: 5).filter { $0 >= start && $0 - start < size }
        #expect(inside.count > 50)
        let offsets = inside.map { DropIn.hex($0 - start) } + [DropIn.hex(size), DropIn.hex(size + 1), "0x100000", "0xffffffffffffffff"]
        let input = offsets.joined(separator: "\n") + "\n"
        let arguments = ["-e", Self.fixture, "-j", ".text"] + flags
        let expected = try DropIn.run(DropIn.binutilsAddr2line, arguments, input: input)
        let actual = try CLI.run(["addr2line"] + arguments, input: input)
        #expect(actual.status == 0)
        let wanted = DropInAddr2lineTests.withoutDiscriminators(expected.stdout)
        #expect(actual.stdout == wanted, "\(DropIn.differences(wanted.split(separator: "\n"), actual.stdout.split(separator: "\n")))")
        // `--section=` is the long spelling.
        #expect(try CLI.run(["addr2line", "-e", Self.fixture, "--section=.text"] + flags, input: input).stdout == wanted)
    }

    @Test func addr2lineAcceptsWhatBinutilsAcceptsAndRefusesWithTheReason() throws {
        let input = "0x1390\n0x10e0\n"
        let plain = try CLI.run(["addr2line", "-e", Self.fixture, "-f", "-i"], input: input)
        // -b with an ELF target, -r and -R change nothing.
        for extra in [["-b", "elf64-x86-64"], ["--target=elf64-x86-64"], ["-r"], ["-R"], ["--no-recurse-limit"], ["-r", "-R"]] {
            let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", Self.fixture, "-f", "-i"] + extra, input: input)
            let actual = try CLI.run(["addr2line", "-e", Self.fixture, "-f", "-i"] + extra, input: input)
            #expect(expected.status == 0 && actual.status == 0, "\(extra): \(actual.stderr)")
            #expect(actual.stdout == plain.stdout)
            #expect(actual.stdout == DropInAddr2lineTests.withoutDiscriminators(expected.stdout))
        }
        // Refused as binutils refuses them, with its reason.
        for (extra, reason) in [(["-b", "bogus"], "invalid bfd target"), (["-j", ".nosuch"], "cannot find section .nosuch")] {
            // Addresses as arguments: both stop before reading anything.
            let expected = try DropIn.run(DropIn.binutilsAddr2line, ["-e", Self.fixture] + extra + ["0x1390"])
            let actual = try CLI.run(["addr2line", "-e", Self.fixture] + extra + ["0x1390"])
            #expect(expected.status == 1 && actual.status == 1)
            #expect(expected.stderr.hasSuffix(": \(reason)\n"))
            #expect(actual.stderr == "crashsym addr2line: \(Self.fixture): \(reason)\n")
            #expect(actual.stdout.isEmpty)
        }
        // -v prints the version.
        let version = try CLI.run(["addr2line", "-v"])
        #expect(version.status == 0 && version.stdout.hasPrefix("crashsym addr2line "))
        // A table keeps no sections: -j on a .csym is refused, saying so.
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (_, table) = try CLI.dumpTable(Self.fixture, into: directory)
        let refused = try CLI.run(["addr2line", "-e", table, "-j", ".text", "0x10"])
        #expect(refused.status == 1)
        #expect(refused.stderr == "crashsym addr2line: \(table): -j needs the ELF file: a .csym table keeps no sections\n")
    }
}
