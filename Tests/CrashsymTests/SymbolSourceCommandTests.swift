import Foundation
import Testing
import TestSupport

/// The CLI's symbol sources as a user meets them (issue 19, items 2 and 8).
@Suite struct SymbolSourceCommandTests {
    static let reports = CLI.root.appendingPathComponent("Fixtures/reports").path

    /// Item 2: a glibc backtrace of a program started as `./bin/prog` finds `bin/prog` under the
    /// working directory or under the report file's own directory; elsewhere `--explain` says
    /// where it looked.
    @Test func aRelativeModulePathIsFoundFromTheWorkingOrTheReportsDirectory() throws {
        let directory = try CLI.temporaryDirectory(), elsewhere = try CLI.temporaryDirectory(), lonely = try CLI.temporaryDirectory()
        defer {
            for path in [directory, elsewhere, lonely] { try? FileManager.default.removeItem(atPath: path) }
        }
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.reports + "/src/prog", toPath: directory + "/bin/prog")
        let line = "./bin/prog(+0x921)[0x55b4268c9921]\n"
        let besideProgram = directory + "/crash.txt", alone = lonely + "/crash.txt"
        try line.write(toFile: besideProgram, atomically: true, encoding: .utf8)
        try line.write(toFile: alone, atomically: true, encoding: .utf8)
        let function = try Tool.output("/usr/bin/addr2line", ["-f", "-e", Self.reports + "/src/prog", "0x920"])
            .split(separator: "\n").first.map(String.init)
        let name = try #require(function)
        #expect(name != "??")
        let real = try #require(realpath(elsewhere, nil).map { String(cString: $0) })

        // From the working directory (the report elsewhere).
        let fromWorkingDirectory = try Tool.run(CLI.binary, ["symbolicate", alone, "--no-cache"], directory: URL(fileURLWithPath: directory))
        #expect(fromWorkingDirectory.status == 0)
        #expect(fromWorkingDirectory.text.contains(name), "\(fromWorkingDirectory.text)")
        // From the report's directory (run from another one, where no bin/prog is).
        let fromReport = try Tool.run(CLI.binary, ["symbolicate", besideProgram, "--no-cache"],
                                      directory: URL(fileURLWithPath: elsewhere))
        #expect(fromReport.status == 0)
        #expect(fromReport.text.contains(name), "\(fromReport.text)")
        // A relative report path names the same directory.
        let parent = URL(fileURLWithPath: directory).deletingLastPathComponent().path
        try #require(parent == URL(fileURLWithPath: elsewhere).deletingLastPathComponent().path)
        let relative = try Tool.run(CLI.binary, ["symbolicate", "../" + URL(fileURLWithPath: directory).lastPathComponent + "/crash.txt", "--no-cache"],
                                    directory: URL(fileURLWithPath: elsewhere))
        #expect(relative.text.contains(name), "\(relative.text)")
        // Neither: both places tried are listed.
        let lost = try Tool.run(CLI.binary, ["symbolicate", alone, "--no-cache", "--explain"], directory: URL(fileURLWithPath: elsewhere))
        #expect(!lost.text.contains(name))
        #expect(lost.text.contains("module path \(lonely)/bin/prog: not found"), "\(lost.text)")
        #expect(lost.text.contains("module path \(real)/bin/prog: not found"), "\(lost.text)")
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
