import Foundation
import Testing
import TestSupport

/// `crashsym dump --format breakpad` through the built binary.
@Suite struct BreakpadCommandTests {
    static var binary: String {
        ProcessInfo.processInfo.environment["CRASHSYM_BINARY"] ?? UnwindFixtures.root + "/.build/debug/crashsym"
    }

    @Test("dump --format breakpad writes <name>/<module id>/<name>.sym and lists it")
    func writesSymbolStoreLayout() throws {
        let output = NSTemporaryDirectory() + "crashsym-breakpad-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: output) }
        let run = try Tool.run(Self.binary, ["dump", "--format", "breakpad", "-o", output,
                                             UnwindFixtures.reference + "/crash_linux"])
        #expect(run.status == 0, "\(run.stderr)")
        let path = output + "/crash_linux/D2554CDB926136C4B9766A086583B9B50/crash_linux.sym"
        #expect(run.text == "db4c55d26192c436b9766a086583b9b5a6d2e271  x86_64  crash_linux  D2554CDB926136C4B9766A086583B9B50  \(path)\n")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasPrefix("MODULE Linux x86_64 D2554CDB926136C4B9766A086583B9B50 crash_linux\nINFO CODE_ID DB4C55D26192C436B9766A086583B9B5A6D2E271\n"))
        // A file that is not ELF is an error (exit 1), as for tables.
        let bad = try Tool.run(Self.binary, ["dump", "--format", "breakpad", "-o", output, UnwindFixtures.reference + "/README.md"])
        #expect(bad.status == 1)
        #expect(try Tool.output(Self.binary, ["dump", "--help"]).contains("breakpad"))
    }
}
