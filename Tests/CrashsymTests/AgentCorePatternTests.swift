import Foundation
import Testing
import TestSupport

/// `scripts/crashsym-core-pattern`: install, status and uninstall against stand-in files for
/// /proc/sys/kernel/core_pattern and core_pipe_limit (its environment overrides), so the machine
/// is left as it was; then one real round trip on the running kernel, which puts the original
/// value back whatever happens.
@Suite(.serialized) struct AgentCorePatternTests {
    static let script = CLI.root.appendingPathComponent("scripts/crashsym-core-pattern").path
    /// An executable for --binary (the script refuses a missing one): short, so that patterns stay
    /// under the kernel's 127 bytes wherever the build is, and harmless, should a process of this
    /// machine crash while the real round trip has it installed (the core is read by nobody).
    static let agentBinary = "/bin/true"

    /// A stand-in kernel directory, sysctl.d and saved-values file.
    struct Machine {
        let root: String
        var kernel: String { root + "/kernel" }
        var sysctl: String { root + "/sysctl.d" }
        var saved: String { root + "/lib/core-pattern.saved" }
        var dropIn: String { sysctl + "/60-crashsym-core-pattern.conf" }

        init(pattern: String, limit: String = "0") throws {
            root = try CLI.temporaryDirectory()
            try FileManager.default.createDirectory(atPath: root + "/kernel", withIntermediateDirectories: true)
            try (pattern + "\n").write(toFile: root + "/kernel/core_pattern", atomically: true, encoding: .utf8)
            try (limit + "\n").write(toFile: root + "/kernel/core_pipe_limit", atomically: true, encoding: .utf8)
        }

        var environment: [String: String] {
            ["CRASHSYM_PROC_SYS_KERNEL": kernel, "CRASHSYM_SYSCTL_DIR": sysctl, "CRASHSYM_CORE_PATTERN_SAVE": saved]
        }

        func setting(_ name: String) throws -> String {
            try String(contentsOfFile: kernel + "/" + name, encoding: .utf8).trimmingCharacters(in: .newlines)
        }

        func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Tool.Run {
            try Tool.run("/bin/bash", [AgentCorePatternTests.script] + arguments, environment: environment.merging(extra) { $1 })
        }
    }

    static var ours: String { "|\(agentBinary) agent capture --state-dir /var/lib/crashsym-agent %P %i %s %t %e" }

    @Test func helpExplainsEveryCommandAndOption() throws {
        let run = try Tool.run("/bin/bash", [Self.script, "--help"])
        #expect(run.status == 0)
        for word in ["install", "uninstall", "status", "--binary", "--state-dir", "--pipe-limit", "--max-memory-mb", "--max-stack-kb", "--env-allow",
                     "--max-captures-per-minute", "--force", "--no-persist", "CRASHSYM_PROC_SYS_KERNEL", "CRASHSYM_SYSCTL_DIR",
                     "CRASHSYM_CORE_PATTERN_SAVE", "Exit status"] {
            #expect(run.text.contains(word), "\(word)")
        }
        #expect(try Tool.run("/bin/bash", [Self.script]).status == 2)
        #expect(try Tool.run("/bin/bash", [Self.script, "remove"]).status == 2)
        #expect(try Tool.run("/bin/bash", [Self.script, "install", "--colour"]).status == 2)
    }

    @Test func installSavesAndUninstallRestoresTheKernelDefault() throws {
        let machine = try Machine(pattern: "core")
        defer { try? FileManager.default.removeItem(atPath: machine.root) }
        let install = try machine.run(["install", "--binary", Self.agentBinary])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(try machine.setting("core_pattern") == Self.ours)
        #expect(try machine.setting("core_pipe_limit") == "16")
        let dropIn = try String(contentsOfFile: machine.dropIn, encoding: .utf8)
        #expect(dropIn.contains("kernel.core_pattern = \(Self.ours)\n"))
        #expect(dropIn.contains("kernel.core_pipe_limit = 16\n"))
        let status = try machine.run(["status"])
        #expect(status.status == 0)
        #expect(status.text.contains("crashsym: installed"))
        #expect(status.text.contains("saved: core (core_pipe_limit 0)"))
        // Installing again, with other settings, keeps the value saved the first time.
        let again = try machine.run(["install", "--binary", Self.agentBinary, "--state-dir", "/srv/agent", "--pipe-limit", "4",
                                     "--max-memory-mb", "64", "--env-allow", "LC_*"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try machine.setting("core_pattern")
                == "|\(Self.agentBinary) agent capture --state-dir /srv/agent --max-memory-mb 64 --env-allow LC_* %P %i %s %t %e")
        #expect(try machine.setting("core_pipe_limit") == "4")
        #expect(try machine.run(["status"]).text.contains("saved: core (core_pipe_limit 0)"))
        // The options the script writes are ones the real helper takes: run the installed pattern's
        // words (the binary swapped for the built agent) as the kernel would, on a core that is no
        // core; a usage error (2) would mean the kernel's every call fails.
        let state = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let words = try machine.setting("core_pattern").dropFirst().split(separator: " ").map(String.init)
        var options = Array(words.dropFirst(3).prefix { !$0.hasPrefix("%") })
        #expect(Array(options.prefix(2)) == ["--state-dir", "/srv/agent"])
        options.removeFirst(min(2, options.count))  // capture(_:state:_:) gives its own
        let empty = state + "/empty"
        FileManager.default.createFile(atPath: empty, contents: Data())
        let helper = try AgentCaptureTests.capture(empty, state: state, options + ["4242", "4242", "11", "1700000000", "prog"])
        #expect(helper.status != 2, "\(helper.stderr)")
        let uninstall = try machine.run(["uninstall"])
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(try machine.setting("core_pattern") == "core")
        #expect(try machine.setting("core_pipe_limit") == "0")
        #expect(!FileManager.default.fileExists(atPath: machine.dropIn))
        #expect(!FileManager.default.fileExists(atPath: machine.saved))
        let after = try machine.run(["status"])
        #expect(after.text.contains("crashsym: not installed") && after.text.contains("drop-in: none") && after.text.contains("saved: none"))
        #expect(try machine.run(["uninstall"]).status == 0)  // nothing to do
        #expect(try machine.setting("core_pattern") == "core")
    }

    @Test func aForeignPipeIsReplacedOnlyWithForceAndGivenBack() throws {
        let coredump = "|/lib/systemd/systemd-coredump %P %u %g %s %t %c %h"
        let machine = try Machine(pattern: coredump, limit: "16")
        defer { try? FileManager.default.removeItem(atPath: machine.root) }
        let refused = try machine.run(["install", "--binary", Self.agentBinary])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("already pipes cores to another program") && refused.stderr.contains("--force"))
        #expect(try machine.setting("core_pattern") == coredump)
        #expect(!FileManager.default.fileExists(atPath: machine.dropIn))
        #expect(!FileManager.default.fileExists(atPath: machine.saved))
        let forced = try machine.run(["install", "--binary", Self.agentBinary, "--force", "--no-persist"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try machine.setting("core_pattern") == Self.ours)
        #expect(!FileManager.default.fileExists(atPath: machine.dropIn))  // --no-persist
        #expect(try machine.run(["uninstall"]).status == 0)
        #expect(try machine.setting("core_pattern") == coredump)
        #expect(try machine.setting("core_pipe_limit") == "16")
    }

    @Test func uninstallLeavesAPatternChangedSinceAlone() throws {
        let machine = try Machine(pattern: "core")
        defer { try? FileManager.default.removeItem(atPath: machine.root) }
        #expect(try machine.run(["install", "--binary", Self.agentBinary]).status == 0)
        try "/var/crash/core.%p\n".write(toFile: machine.kernel + "/core_pattern", atomically: true, encoding: .utf8)
        let uninstall = try machine.run(["uninstall"])
        #expect(uninstall.status == 0)
        #expect(uninstall.stderr.contains("not crashsym's"))
        #expect(try machine.setting("core_pattern") == "/var/crash/core.%p")
        #expect(!FileManager.default.fileExists(atPath: machine.dropIn))
    }

    /// A step that fails puts back what the run changed; patterns the kernel would cut and
    /// missing programs are refused before anything changes.
    @Test func failuresChangeNothing() throws {
        let machine = try Machine(pattern: "core")
        defer { try? FileManager.default.removeItem(atPath: machine.root) }
        // The drop-in cannot be written: sysctl.d is a file.
        FileManager.default.createFile(atPath: machine.sysctl, contents: Data())
        let failed = try machine.run(["install", "--binary", Self.agentBinary])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("cannot write \(machine.dropIn)"))
        #expect(try machine.setting("core_pattern") == "core")
        #expect(try machine.setting("core_pipe_limit") == "0")
        #expect(!FileManager.default.fileExists(atPath: machine.saved))
        let long = try machine.run(["install", "--binary", Self.agentBinary, "--state-dir", "/" + String(repeating: "d", count: 120)])
        #expect(long.status == 2)
        #expect(long.stderr.contains("over the kernel's 127"))
        let missing = try machine.run(["install", "--binary", "/nonexistent/crashsym-agent"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("is not an executable file"))
        #expect(try machine.setting("core_pattern") == "core")
    }

    /// The running kernel's own core_pattern, installed and uninstalled for real (the drop-in and
    /// saved values in a temporary directory); the original value is written back even when an
    /// expectation fails. Running as root on a kernel whose /proc/sys is writable is required:
    /// where it is not, this test fails saying so rather than passing without having run.
    @Test func aRealRoundTripOnTheRunningKernel() throws {
        let proc = "/proc/sys/kernel/core_pattern", limitFile = "/proc/sys/kernel/core_pipe_limit"
        let original = try String(contentsOfFile: proc, encoding: .utf8).trimmingCharacters(in: .newlines)
        let originalLimit = try String(contentsOfFile: limitFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        guard access(proc, W_OK) == 0 else {
            Issue.record("cannot write \(proc) (uid \(getuid()), errno \(errno)): the real core_pattern round trip did not run; run the tests as root on a host whose /proc/sys is writable")
            return
        }
        let scratch = try CLI.temporaryDirectory()
        defer {
            // Whatever happened: the machine's values back.
            if (try? String(contentsOfFile: proc, encoding: .utf8).trimmingCharacters(in: .newlines)) != original {
                try? (original + "\n").write(toFile: proc, atomically: false, encoding: .utf8)
            }
            try? (originalLimit + "\n").write(toFile: limitFile, atomically: false, encoding: .utf8)
            try? FileManager.default.removeItem(atPath: scratch)
        }
        let environment = ["CRASHSYM_SYSCTL_DIR": scratch + "/sysctl.d", "CRASHSYM_CORE_PATTERN_SAVE": scratch + "/saved"]
        // A foreign pipe (say systemd-coredump) is not taken over by this test.
        let state = "/tmp/crashsym-core-test"  // never written: /bin/true reads no core
        let install = try Tool.run("/bin/bash", [Self.script, "install", "--binary", Self.agentBinary, "--state-dir", state],
                                   environment: environment)
        if original.hasPrefix("|") && !original.contains(" agent capture ") {
            #expect(install.status == 1, "\(install.stderr)")
            #expect(try String(contentsOfFile: proc, encoding: .utf8).trimmingCharacters(in: .newlines) == original)
            return
        }
        #expect(install.status == 0, "\(install.stderr)")
        let installed = try String(contentsOfFile: proc, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(installed == "|\(Self.agentBinary) agent capture --state-dir \(state) %P %i %s %t %e")
        #expect(try String(contentsOfFile: limitFile, encoding: .utf8).trimmingCharacters(in: .newlines) == "16")
        let uninstall = try Tool.run("/bin/bash", [Self.script, "uninstall"], environment: environment)
        #expect(uninstall.status == 0, "\(uninstall.stderr)")
        #expect(try String(contentsOfFile: proc, encoding: .utf8).trimmingCharacters(in: .newlines) == original)
        #expect(try String(contentsOfFile: limitFile, encoding: .utf8).trimmingCharacters(in: .newlines) == originalLimit)
    }
}
