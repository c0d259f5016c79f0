import Foundation
import Testing
import TestSupport

/// The CLI's symbol sources as a user meets them (issue 19, items 2 and 8).
@Suite struct SymbolSourceCommandTests {
    static let reports = CLI.root.appendingPathComponent("Fixtures/reports").path

    /// Item 2: a glibc backtrace of a program started as `./bin/prog`, symbolicated from the
    /// directory it was started in, finds `bin/prog` there; elsewhere `--explain` says where it looked.
    @Test func aRelativeModulePathIsFoundFromTheWorkingDirectory() throws {
        let directory = try CLI.temporaryDirectory(), elsewhere = try CLI.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: elsewhere)
        }
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.reports + "/src/prog", toPath: directory + "/bin/prog")
        let report = directory + "/crash.txt"
        try "./bin/prog(+0x921)[0x55b4268c9921]\n".write(toFile: report, atomically: true, encoding: .utf8)
        let function = try Tool.output("/usr/bin/addr2line", ["-f", "-e", Self.reports + "/src/prog", "0x920"])
            .split(separator: "\n").first.map(String.init)
        let name = try #require(function)
        #expect(name != "??")

        let found = try Tool.run(CLI.binary, ["symbolicate", report, "--no-cache"], directory: URL(fileURLWithPath: directory))
        #expect(found.status == 0)
        #expect(found.text.contains(name), "\(found.text)")
        let lost = try Tool.run(CLI.binary, ["symbolicate", report, "--no-cache", "--explain"], directory: URL(fileURLWithPath: elsewhere))
        #expect(!lost.text.contains(name))
        let real = try #require(realpath(elsewhere, nil).map { String(cString: $0) })
        #expect(lost.text.contains("tried: module path \(real)/bin/prog: not found"), "\(lost.text)")
    }

    /// Item 8: `lookup ELF` keeps its conversion in the table cache `symbolicate` and `addr2line`
    /// use, and says that addresses are module-relative when given one outside the module.
    @Test func lookupUsesTheTableCacheAndExplainsAbsoluteAddresses() throws {
        let cache = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let program = Self.reports + "/src/prog"
        let environment = ["CRASHSYM_CACHE_DIR": cache]
        let first = try CLI.run(["lookup", program, "0x920"], environment: environment)
        #expect(first.status == 0)
        let written = try FileManager.default.contentsOfDirectory(atPath: cache)
        #expect(written.count == 1 && written[0].hasSuffix(".csym"), "\(written)")
        let second = try CLI.run(["lookup", program, "0x920"], environment: environment)
        #expect(second.stdout == first.stdout)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache) == written)
        #expect(!first.stderr.contains("module-relative"))

        let absolute = try CLI.run(["lookup", program, "0x55b4268c9921"], environment: environment)
        #expect(absolute.stderr == "crashsym: 0x55b4268c9921 is above every segment of the module: lookup takes module-relative "
                + "addresses (file virtual addresses: a runtime pc minus the module's load address, plus its first segment's address)\n",
                "\(absolute.stderr)")
    }
}
