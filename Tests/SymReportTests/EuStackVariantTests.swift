import Foundation
import Testing
@testable import SymReport

/// Every variant eu-stack prints, of live processes and of core files (Fixtures/reports, captured
/// by scripts/build-report-fixtures), read against an independent reading of the same text.
@Suite struct EuStackVariantTests {
    static let variants = [
        "eu-stack.txt",                      // -b -l -p: process, module map
        "eu-stack-process-quiet.txt",        // -q -b -p: process, no names, no map
        "eu-stack-core.txt",                 // -b -l --core: C program, SIGSEGV
        "eu-stack-core-threads.txt",         // -b -l -i --core: C++, five threads
        "eu-stack-core-threads-quiet.txt",   // -q -b --core: no map
        "eu-stack-core-plain.txt",           // --core: names only
        "eu-stack-core-quiet.txt",           // -q --core: addresses only
        "eu-stack-core-verbose.txt",         // -l -v --core: activation marks, module names, sources
        "eu-stack-core-verbose-b.txt",       // -b -l -v --core
    ]

    @Test("every eu-stack variant is detected", arguments: variants)
    func detection(name: String) throws {
        #expect(ReportFormat.detect(try Reports.text(name)) == .euStack)
    }

    @Test("frames, threads and -b offsets of every variant", arguments: variants)
    func frames(name: String) throws {
        let text = try Reports.text(name)
        let report = try CrashReport.parse(text)
        #expect(report.format == .euStack)
        // An independent reading: `#N  0xPC…` lines, each with its `[id]@0xstart+0xoffset` when present.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var expected: [(index: Int, pc: UInt64, buildID: String?, offset: UInt64?)] = []
        for (number, line) in lines.enumerated() {
            guard let frame = try Reports.matches(#"^#(\d+)\s+0x([0-9a-f]+)"#, in: line).first else { continue }
            let next = number + 1 < lines.count ? lines[number + 1] : ""
            let location = try Reports.matches(#"^\s+\[([0-9a-f]+)\]@0x[0-9a-f]+\+0x([0-9a-f]+)$"#, in: next).first
            expected.append((Int(frame[1])!, UInt64(frame[2], radix: 16)!, location?[1], location.map { UInt64($0[2], radix: 16)! }))
        }
        let frames = report.stacks.flatMap(\.frames)
        try #require(frames.count == expected.count && !expected.isEmpty)
        for (want, frame) in zip(expected, frames) {
            #expect(frame.index == want.index)
            #expect(frame.address == want.pc)
            #expect(frame.problem == nil)
            if let offset = want.offset {
                #expect(frame.moduleOffset == offset)
                #expect(frame.convention == .exact)
                #expect(report.modules[try #require(frame.module)].buildID == want.buildID)
            }
        }
        let threads = try Reports.matches(#"^TID (\d+):$"#, in: text).map { $0[1] }
        #expect(report.stacks.map(\.thread) == threads)
        // A core file's first thread is the one that dumped it; a live process has none crashed.
        let isCore = text.hasPrefix("PID ") && text.split(separator: "\n").first!.contains(" - core")
        #expect(report.stacks.map(\.crashed) == threads.indices.map { isCore && $0 == 0 })
        #expect(report.metadata("pid") == (try Reports.matches(#"^PID (\d+) - "#, in: text).first?[1]))
    }

    @Test func theMultiThreadedCoreHasFiveThreadsTheAbortingOneFirst() throws {
        let report = try CrashReport.parse(try Reports.text("eu-stack-core-threads.txt"))
        #expect(report.stacks.count == 5)
        #expect(report.stacks[0].crashed)
        #expect(report.stacks[0].frames.compactMap(\.function).contains("fixture::Worker<int>::fail()"))
        // Three workers wait; the main thread joins.
        #expect(report.stacks.filter { $0.frames.compactMap(\.function).contains("fixture::Worker<long>::wait()") }.count == 3)
        #expect(report.stacks.filter { $0.frames.compactMap(\.function).contains("std::thread::join()") }.count == 1)
        // The module map gives the executable's path and every module's build-id.
        let program = try #require(report.modules.first { $0.name == "core-threads" })
        #expect(program.path == "/tmp/crashsym-reports/core-threads")
        #expect(report.modules.filter { $0.loadAddress != nil && $0.size != nil }.count == 7)
    }

    @Test func activationMarksAndModuleNamesOfVerboseOutput() throws {
        // `-v` without `-b`: frames are placed by the module map; ` - 1` marks return addresses.
        let report = try CrashReport.parse(try Reports.text("eu-stack-core-verbose.txt"))
        let frames = report.stacks[0].frames
        #expect(frames.map(\.convention) == [.exact] + Array(repeating: .returnAddress, count: frames.count - 1))
        #expect(frames.first?.function == "update")
        #expect(frames.map(\.function).contains("__libc_start_call_main"))
        #expect(frames.allSatisfy { $0.function?.hasSuffix(" - core-crash") != true && $0.function?.hasSuffix(" - libc.so.6") != true })
        #expect(frames.map { $0.module.map { report.modules[$0].name } }.first == "core-crash")
        #expect(frames.allSatisfy { $0.module != nil })
        // A frame interrupted by a signal is not marked: `-a` says it is exact.
        let marked = try CrashReport.parse("""
            PID 7 - core module memory map
            0x1000-0x3000 app
              [aabbccdd]
              /app
              -
            PID 7 - core
            TID 7:
            #0  0x0000000000001010     fault - app
            #1  0x0000000000001020     handler_return - app
            #2  0x0000000000001030 - 1 main - app
            """)
        #expect(marked.stacks[0].frames.map(\.convention) == [.exact, .exact, .returnAddress])
        #expect(marked.stacks[0].frames.map(\.function) == ["fault", "handler_return", "main"])
        #expect(marked.stacks[0].frames.map(\.module) == [0, 0, 0])
    }

    @Test func quietOutputWithoutAMapHasNoModules() throws {
        let report = try CrashReport.parse(try Reports.text("eu-stack-core-quiet.txt"))
        #expect(report.modules.isEmpty)
        #expect(report.stacks[0].frames.allSatisfy { $0.function == nil && $0.module == nil && $0.address != nil })
    }

    @Test func aStackPastedWithoutItsPIDLineIsStillEuStack() throws {
        let text = """
            TID 42:
            #0  0x00007f2443b4beec __pthread_kill_implementation
                [93ac61ec5a8eb1396f9fbd350e3169a558528a40]@0x7f2443ac1000+0x8aeec
            #1  0x00007f2443afcfb2 raise
                [93ac61ec5a8eb1396f9fbd350e3169a558528a40]@0x7f2443ac1000+0x3bfb1
            """
        #expect(ReportFormat.detect(text) == .euStack)
        let report = try CrashReport.parse(text)
        #expect(report.modules.count == 1)
        #expect(report.stacks[0].frames.map(\.moduleOffset) == [0x8aeec, 0x3bfb1])
    }
}
