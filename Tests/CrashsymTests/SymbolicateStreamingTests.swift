import Foundation
import Synchronization
import Testing

/// `crashsym symbolicate` reading standard input as a stream (`adb logcat | crashsym symbolicate`),
/// through the built binary.
@Suite struct SymbolicateStreamingTests {
    static let options = ["--symbols", SymbolicateCommandTests.binaries, "--symbols", CLI.fixture("libnative-android21-aarch64.so")]
        + SymbolicateCommandTests.isolation

    @Test("standard input prints what the file gives", arguments: [
        "asan-use-after-free.txt", "ubsan-overflow.txt", "tsan-data-race.txt", "lsan-leak.txt", "glibc-backtrace.txt",
        "tombstone-arm64.txt", "logcat-crash.txt", "swift-backtrace.txt", "eu-stack.txt", "eu-stack-core.txt",
        "eu-stack-core-threads.txt", "eu-stack-core-verbose.txt", "eu-stack-process-quiet.txt",
    ])
    func streamedOutputIsTheFilesOutput(name: String) throws {
        let path = SymbolicateCommandTests.report(name)
        let file = try CLI.run(["symbolicate", path] + Self.options)
        let streamed = try CLI.run(["symbolicate"] + Self.options, input: try String(contentsOfFile: path, encoding: .utf8))
        #expect(file.status == 0 && streamed.status == 0, "\(streamed.stderr)")
        #expect(streamed.stdout == file.stdout)
        #expect(file.stdout.contains(" in "))  // something resolved
    }

    /// A log around two reports: each report is printed as it would be alone, the log lines as they are.
    @Test func aLogWithReportsIsPrintedWithEachReportCompleted() throws {
        let glibc = SymbolicateCommandTests.report("glibc-backtrace.txt")
        let core = SymbolicateCommandTests.report("eu-stack-core.txt")
        let alone = try [glibc, core].map { try CLI.run(["symbolicate", $0] + Self.options).stdout }
        let log = "starting\n" + (try String(contentsOfFile: glibc, encoding: .utf8)) + "restarting\n"
            + (try String(contentsOfFile: core, encoding: .utf8)) + "stopped\n"
        let streamed = try CLI.run(["symbolicate"] + Self.options, input: log)
        #expect(streamed.status == 0)
        #expect(streamed.stdout == "starting\n" + alone[0] + "restarting\n" + alone[1] + "stopped\n")
    }

    @Test func inputWithoutAReportIsPrintedAndFails() throws {
        let result = try CLI.run(["symbolicate"] + Self.options, input: "just\na log\n")
        #expect(result.status == 1)
        #expect(result.stdout == "just\na log\n")
        #expect(result.stderr == "crashsym: <stdin>: no crash report found\n")
    }

    /// The pipe stays open: each report must come out before more input is written (ended by the
    /// next line), or after a pause (the last report of a quiet log).
    @Test func eachReportIsPrintedWhileTheInputIsStillOpen() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["symbolicate"] + Self.options
        process.currentDirectoryURL = CLI.root
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let received = StreamedOutput()
        output.fileHandleForReading.readabilityHandler = { handle in received.append(handle.availableData) }
        defer {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
        }
        func waitFor(_ text: String) -> Bool {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                if received.text.contains(text) { return true }
                usleep(20_000)
            }
            return false
        }
        let glibc = try String(contentsOfFile: SymbolicateCommandTests.report("glibc-backtrace.txt"), encoding: .utf8)
        let completed = "] in run /fixtures-reports/prog.c:8:43\n"
        // A line before any report is printed at once.
        input.fileHandleForWriting.write(Data("app: started\n".utf8))
        #expect(waitFor("app: started\n"))
        // A report ended by the next line.
        input.fileHandleForWriting.write(Data((glibc + "app: restarting\n").utf8))
        #expect(waitFor("app: restarting\n"), "the report was not printed while the pipe was open")
        #expect(received.text.contains(completed))
        // A report the input pauses after.
        let core = try String(contentsOfFile: SymbolicateCommandTests.report("eu-stack-core.txt"), encoding: .utf8)
        input.fileHandleForWriting.write(Data(core.utf8))
        let lastLine = String(core.split(separator: "\n").last!) + "\n"
        #expect(waitFor(lastLine), "the last report was not printed after a pause")
        #expect(received.text.contains(" in update /fixtures-reports/core-crash.c:"))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}

/// Bytes read from a child's standard output on another thread.
final class StreamedOutput: Sendable {
    private let bytes = Mutex(Data())

    func append(_ data: Data) { bytes.withLock { $0.append(data) } }

    var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
}
