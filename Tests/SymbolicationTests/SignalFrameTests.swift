import Foundation
import SymReport
import Testing
@testable import Symbolication
import TestSupport

/// Issue 19, item 4: in a backtrace printed by a signal handler, the frame after the signal
/// trampoline is the faulting instruction, not a return address; and the trampoline itself is
/// named (looked up at its own pc, where `__restore_rt` starts).
@Suite struct SignalFrameTests {
    /// A program whose SIGSEGV handler prints `backtrace_symbols_fd`; the faulting store is the
    /// first instruction of its line, so `pc - 1` would land on the line before.
    static let source = """
        #include <execinfo.h>
        #include <signal.h>
        #include <unistd.h>
        int marker;
        static void handler(int signal) {
            void *frames[32];
            int count = backtrace(frames, 32);
            backtrace_symbols_fd(frames, count, 1);
            _exit(3);
        }
        __attribute__((noinline)) void crash(int *p) {
            marker = 1;
            *p = 42;
        }
        int main(void) {
            signal(SIGSEGV, handler);
            int *volatile target = 0;
            crash(target);
            return 0;
        }
        """
    /// The line of `*p = 42;`.
    static let faultingLine: UInt32 = 13

    @Test func theFrameAfterTheTrampolineIsLookedUpExactly() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.source.write(toFile: directory + "/handler.c", atomically: true, encoding: .utf8)
        let program = directory + "/handler"
        try #require(try ReportFixtures.run("/usr/bin/cc", ["-O2", "-g", "-Wl,--build-id=sha1", "-o", program, directory + "/handler.c"]) == 0)
        let run = try Tool.run(program, [])
        #expect(run.status == 3)
        let report = try CrashReport.parse(run.text)
        let stack = report.stacks[0].frames

        // The system's libc with its separate debug file (libc6-dbg), as `symbolicate` finds them.
        let sources = SymbolSources(searchPaths: [], useModulePaths: true, locator: DebugFileLocator(), cacheDirectory: nil)
        let result = Symbolicator(sources: sources).symbolicate(report)
        let names = result.frames[0].map { $0.locations.last?.function }
        let trampoline = try #require(names.firstIndex(of: "__restore_rt"), "\(names) from\n\(run.text)")
        #expect(result.report.stacks[0].frames[trampoline].convention == .exact)
        #expect(result.frames[0][trampoline].lookupAddress == result.frames[0][trampoline].moduleAddress)

        let faulting = trampoline + 1
        #expect(stack[faulting].module.map { report.modules[$0].path } == program)
        #expect(result.frames[0][faulting].lookupAddress == result.frames[0][faulting].moduleAddress)
        #expect(result.report.stacks[0].frames[faulting].convention == .exact)
        let innermost = try #require(result.frames[0][faulting].locations.first)
        #expect(innermost.function == "crash" && innermost.line == Self.faultingLine)
        // The oracle, asked for the exact pc.
        let address = try #require(result.frames[0][faulting].moduleAddress)
        let expected = try LLVMSymbolizer.symbolize(object: program, addresses: [address])[0]
        #expect(result.frames[0][faulting].locations.map(LLVMSymbolizer.Frame.init) == expected)
        // The frames after it are return addresses again.
        #expect(result.report.stacks[0].frames[faulting + 1].convention == .returnAddress)
        #expect(result.frames[0][faulting + 1].locations.last?.function == "main")
    }
}
