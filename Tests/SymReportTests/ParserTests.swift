import TestSupport
import Foundation
import SymBytes
import Testing
@testable import SymReport

/// Each parser over its real report, checked against an independent reading of the same text.
@Suite struct ParserTests {
    @Test("formats are detected", arguments: [
        ("asan-use-after-free.txt", ReportFormat.sanitizer),
        ("glibc-backtrace.txt", .glibc),
        ("eu-stack.txt", .euStack),
        ("eu-stack-nopie.txt", .euStack),
        ("swift-backtrace.json", .swiftJSON),
        ("swift-backtrace.txt", .swiftText),
        ("tombstone-arm64.txt", .tombstone),
        ("logcat-crash.txt", .tombstone),
        ("ubsan-overflow.txt", .sanitizer),
        ("tsan-data-race.txt", .sanitizer),
        ("lsan-leak.txt", .sanitizer),
        ("crashsym-report.json", .crashsymJSON),
    ])
    func detection(name: String, format: ReportFormat) throws {
        #expect(ReportFormat.detect(try Reports.text(name)) == format)
    }

    @Test func asanReportHasItsThreeStacksInOrder() throws {
        let text = try Reports.text("asan-use-after-free.txt")
        let report = try CrashReport.parse(text)
        #expect(report.format == .sanitizer)
        #expect(report.signal == "heap-use-after-free")
        #expect(report.reason?.hasPrefix("AddressSanitizer: heap-use-after-free on address 0x") == true)
        #expect(report.stacks.map(\.frames.count) == [5, 4, 4])
        #expect(report.stacks[0].name?.hasPrefix("READ of size 1 at 0x") == true)
        #expect(report.stacks[1].name == "freed by thread T0 here")
        #expect(report.stacks[2].name == "previously allocated by thread T0 here")
        #expect(report.stacks.map(\.thread) == ["T0", "T0", "T0"])
        #expect(report.stacks.map(\.crashed) == [true, false, false])

        // An independent reading of every frame line: index, pc, module, offset, build-id.
        let lines = try Reports.matches(
            #"^\s*#(\d+) 0x([0-9a-f]+)  \(([^+()]+)\+0x([0-9a-f]+)\)(?: \(BuildId: ([0-9a-f]+)\))?$"#, in: text)
        let frames = report.stacks.flatMap(\.frames)
        try #require(lines.count == frames.count)
        for (expected, frame) in zip(lines, frames) {
            #expect(frame.index == Int(expected[1]))
            #expect(frame.address == UInt64(expected[2], radix: 16))
            #expect(frame.moduleOffset == UInt64(expected[4], radix: 16))
            #expect(frame.convention == .exact)
            #expect(frame.offsetBase == .virtualAddress)
            #expect(frame.problem == nil)
            let module = report.modules[try #require(frame.module)]
            #expect(module.path == expected[3])
            if !expected[5].isEmpty { #expect(module.buildID == expected[5]) }
        }
        // prog, libfault, libc and the ASan runtime: four modules, three with build-ids.
        #expect(report.modules.count == 4)
        #expect(Set(report.modules.compactMap(\.buildID)).count == 3)
    }

    @Test func otherSanitizersAreRead() throws {
        let ubsan = try CrashReport.parse(try Reports.text("ubsan-overflow.txt"))
        #expect(ubsan.signal == "runtime-error")
        #expect(ubsan.reason?.hasPrefix("signed integer overflow: ") == true)
        #expect(ubsan.metadata("location") == "sanitizers.c:10:18")
        #expect(ubsan.stacks.map(\.frames.count) == [5])

        let tsan = try CrashReport.parse(try Reports.text("tsan-data-race.txt"))
        #expect(tsan.signal == "data race")
        #expect(tsan.stacks.count == 3)
        #expect(tsan.stacks.map(\.thread) == ["main", "T1", "main"])  // T1 was created by frames on the main thread
        // TSan prints no address with symbolize=0 and names modules without a path.
        let first = tsan.stacks[0].frames[0]
        #expect(first.address == nil && first.moduleOffset != nil && first.problem == nil)
        #expect(tsan.modules[try #require(first.module)].path == "sanitizers-tsan")

        let lsan = try CrashReport.parse(try Reports.text("lsan-leak.txt"))
        #expect(lsan.signal == "detected memory leaks")
        #expect(lsan.stacks.count == 1)
        #expect(lsan.stacks[0].name?.hasPrefix("Direct leak of 7 byte(s) in 1 object(s) allocated from") == true)
    }

    @Test func glibcBacktraceFramesAreReturnAddresses() throws {
        let text = try Reports.text("glibc-backtrace.txt")
        let report = try CrashReport.parse(text)
        #expect(report.format == .glibc)
        let lines = try Reports.matches(#"^(\S+)\(([^+)]*)\+0x([0-9a-f]+)\)\[0x([0-9a-f]+)\]$"#, in: text)
        let frames = try #require(report.stacks.first).frames
        try #require(lines.count == frames.count && frames.count == 7)
        for (position, (expected, frame)) in zip(lines, frames).enumerated() {
            #expect(frame.index == position)
            #expect(frame.convention == .returnAddress)
            #expect(frame.address == UInt64(expected[4], radix: 16))
            #expect(frame.moduleOffset == UInt64(expected[3], radix: 16))
            #expect(frame.symbol == (expected[2].isEmpty ? nil : expected[2]))
            #expect(report.modules[try #require(frame.module)].path == expected[1])
        }
    }

    @Test func euStackFramesCarryTheirAdjustedOffsets() throws {
        let text = try Reports.text("eu-stack.txt")
        let report = try CrashReport.parse(text)
        #expect(report.format == .euStack)
        let maps = try Reports.matches(#"^0x([0-9a-f]+)-0x([0-9a-f]+) (.+)\n  \[([0-9a-f]+)\]"#, in: text)
        #expect(report.modules.count == maps.count)
        for map in maps {
            let module = try #require(report.modules.first { $0.name == map[3] })
            #expect(module.loadAddress == UInt64(map[1], radix: 16))
            #expect(module.buildID == map[4])
        }
        let frames = try Reports.matches(#"^#(\d+)\s+0x([0-9a-f]+) .*\n\s+\[([0-9a-f]+)\]@0x([0-9a-f]+)\+0x([0-9a-f]+)$"#, in: text)
        let stack = try #require(report.stacks.first)
        #expect(report.stacks.count == 1)
        #expect(stack.thread == report.metadata("pid"))
        try #require(stack.frames.count == frames.count && frames.count == 7)
        for (expected, frame) in zip(frames, stack.frames) {
            #expect(frame.index == Int(expected[1]))
            #expect(frame.address == UInt64(expected[2], radix: 16))
            #expect(frame.moduleOffset == UInt64(expected[5], radix: 16))
            #expect(frame.offsetBase == .mappingStart)
            #expect(frame.convention == .exact)
            #expect(report.modules[try #require(frame.module)].buildID == expected[3])
        }
    }

    @Test func swiftJSONFramesMarkReturnAddresses() throws {
        let text = try Reports.text("swift-backtrace.json")
        let report = try CrashReport.parse(text)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let images = try #require(json["images"] as? [[String: Any]])
        #expect(report.modules.map(\.name) == images.map { $0["name"] as? String ?? "" })
        #expect(report.modules.map(\.buildID) == images.map { $0["buildId"] as? String })
        let thread = try #require((json["threads"] as? [[String: Any]])?.first)
        let frames = (thread["frames"] as? [[String: String]] ?? []).filter { $0["address"] != nil }
        let stack = try #require(report.stacks.first)
        #expect(stack.crashed && stack.name == "crash-swift")
        try #require(stack.frames.count == frames.count && frames.count == 5)
        for (expected, frame) in zip(frames, stack.frames) {
            #expect(frame.address == UInt64(expected["address"]!.dropFirst(2), radix: 16))
            #expect(frame.convention == (expected["kind"] == "returnAddress" ? .returnAddress : .exact))
            #expect(frame.module != nil)
        }
        #expect(report.signal == "Illegal instruction")
    }

    @Test func swiftTextFramesAndImagesAgreeWithTheJSONForm() throws {
        let report = try CrashReport.parse(try Reports.text("swift-backtrace.txt"))
        #expect(report.format == .swiftText)
        #expect(report.signal == "Illegal instruction")
        #expect(report.modules.map(\.name) == ["crash-swift", "libswiftCore.so"])
        #expect(report.modules.map(\.buildID) == ["77815f0adec7e2f60fb984eeb951ebcad59a1f2f", "b521f25fdeacf504eca83d97c7308e8fc11be729"])
        let stack = try #require(report.stacks.first)
        #expect(stack.crashed && stack.name == "crash-swift" && stack.thread == "0")
        #expect(stack.frames.map(\.index) == [0, 1, 2, 3, 4])
        #expect(stack.frames.map(\.convention) == [.exact, .returnAddress, .returnAddress, .returnAddress, .returnAddress])
        #expect(stack.frames.map { $0.module.map { report.modules[$0].name } } == ["libswiftCore.so", "libswiftCore.so", "crash-swift", "crash-swift", "crash-swift"])
    }

    @Test func tombstoneThreadsAPKPathsAndNamesAreRead() throws {
        let report = try CrashReport.parse(try Reports.text("tombstone-arm64.txt"))
        #expect(report.format == .tombstone)
        #expect(report.signal == "SIGSEGV")
        #expect(report.reason == "null pointer dereference")
        #expect(report.metadata("abi") == "arm64")
        #expect(report.metadata("pid") == "4242")
        #expect(report.stacks.map(\.thread) == ["4242", "4261"])
        #expect(report.stacks.map(\.name) == ["example.fixture", "RenderThread"])
        #expect(report.stacks.map(\.crashed) == [true, false])
        #expect(report.stacks.map(\.frames.count) == [4, 2])
        let crash = report.stacks[0].frames[0]
        #expect(crash.moduleOffset == 0x408 && crash.convention == .exact && crash.offsetBase == .virtualAddress)
        #expect(crash.function == "Java_com_example_fixture_NativeLib_crash")
        #expect(report.stacks[0].frames[3].function == "art::ArtMethod::Invoke(art::Thread*, unsigned int*, unsigned int, art::JValue*, char const*)")
        let apkFrame = report.stacks[1].frames[0]
        let apk = report.modules[try #require(apkFrame.module)]
        #expect(apk.name == "libnative.so")
        #expect(apk.path.hasSuffix("/base.apk!libnative.so"))
        #expect(apk.fileOffset == 0x8000)
        #expect(apk.buildID == "e03ccdafa43863f9af2ce1fae1ad807221129774")
        #expect(apkFrame.function == "Java_com_example_fixture_NativeLib_compute")
        #expect(apkFrame.moduleOffset == 0x3d4)
    }

    @Test func oldTombstoneFramesAreRead() throws {
        // Pre-Android 8 debuggerd: 32-bit pcs, two spaces after the frame number, no build-id.
        let report = try CrashReport.parse("""
            *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
            pid: 1510, tid: 1510, name: app  >>> com.example <<<
            signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------
            backtrace:
                #00  pc 0004793e  /system/lib/libc.so (pthread_kill+34)
                #01  pc 0001a1d4  /data/app/com.example-1/lib/arm/libfoo.so
            """)
        #expect(report.signal == "SIGABRT")
        let frames = report.stacks[0].frames
        #expect(frames.map(\.moduleOffset) == [0x4793e, 0x1a1d4])
        #expect(frames.map(\.function) == ["pthread_kill", nil])
        #expect(frames.map { report.modules[$0.module!].name } == ["libc.so", "libfoo.so"])
    }

    @Test func logcatPrefixesAreSkipped() throws {
        let report = try CrashReport.parse(try Reports.text("logcat-crash.txt"))
        #expect(report.signal == "SIGSEGV")
        #expect(report.metadata("abi") == "arm64")
        #expect(report.stacks.count == 1)
        #expect(report.stacks[0].thread == "4242")
        #expect(report.stacks[0].frames.map(\.moduleOffset) == [0x408, 0x2d6e30, 0x2c0264, 0x33e114])
    }

    @Test func crashsymJSONIsReadAndItsErrorsNamed() throws {
        let report = try CrashReport.parse("""
            {"modules":[{"name":"prog","path":"/bin/prog","build_id":"ABCDEF0123","load_address":"0x1000","size":"0x100"}],
             "stacks":[{"name":"main","thread":"1","crashed":true,"frames":[
               {"index":0,"module":"prog","module_offset":"0x10"},
               {"index":1,"address":"0x1020","address_kind":"return-address"}]}]}
            """)
        #expect(report.format == .crashsymJSON)
        #expect(report.modules[0].buildID == "abcdef0123")
        let frames = report.stacks[0].frames
        #expect(frames[0].module == 0 && frames[0].moduleOffset == 0x10 && frames[0].offsetBase == .virtualAddress)
        #expect(frames[1].module == 0 && frames[1].convention == .returnAddress && frames[1].offsetBase == .mappingStart)
        #expect(throws: FormatError.self) {
            try CrashReport.parse(#"{"stacks":[{"frames":[{"module":7,"module_offset":"0x1"}]}]}"#)
        }
        do {
            _ = try CrashReport.parse("{\"stacks\": [1,\n 2,,]}", format: .crashsymJSON)
            Issue.record("bad JSON was accepted")
        } catch {
            #expect(error.message.hasPrefix("line 2, column 4:"))
        }
    }

    @Test("a crashsym report without frames is read when it says why, and refused when it does not")
    func aCrashsymReportWithoutFramesNeedsAReason() throws {
        let record = try CrashReport.parse(#"{"signal":"SIGSEGV","reason":"core not kept: over 10 cores in a minute","#
                                           + #""metadata":{"command_line":"/bin/prog -v"},"modules":[],"stacks":[]}"#)
        #expect(record.signal == "SIGSEGV" && record.reason == "core not kept: over 10 cores in a minute")
        #expect(record.metadata("command_line") == "/bin/prog -v")
        #expect(record.frameCount == 0)
        for refused in [#"{"signal":"SIGSEGV","stacks":[]}"#, #"{"reason":"","stacks":[{"frames":[]}]}"#,
                        #"{"threads":[],"images":[],"reason":"x"}"#] {
            #expect(throws: FormatError.self, "\(refused)") { try CrashReport.parse(refused) }
        }
    }

    @Test func aSymbolizedSanitizerLineIsAFrameWithoutModule() throws {
        let report = try CrashReport.parse("""
            ==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000
                #0 0x55d0c2a1b2c4 in main /src/a.c:3:5
                #1 0x55d0c2a1b2d0  (/bin/prog+0x1b2d0) (BuildId: 5f0e5f0e5f0e)
            """)
        let frames = report.stacks[0].frames
        #expect(frames.count == 2)
        #expect(frames[0].function == "main /src/a.c:3:5")
        #expect(frames[0].module == nil)
        #expect(frames[0].problem != nil)
        #expect(frames[1].module != nil && frames[1].problem == nil)
        #expect(report.modules[frames[1].module!].buildID == "5f0e5f0e5f0e")
    }

    // MARK: Malformed input

    @Test func garbageIsRefusedNamingTheLine() throws {
        do {
            _ = try CrashReport.parse("hello\nworld\n")
            Issue.record("garbage was accepted")
        } catch {
            #expect(error.code == .badMagic)
            #expect(error.message.hasPrefix("line 1:"))
        }
        #expect(throws: FormatError.self) { try CrashReport.parse("") }
    }

    @Test func aHugeLineIsRefusedNamingTheLine() throws {
        let text = "==1==ERROR: AddressSanitizer: SEGV\n" + String(repeating: "A", count: ReportFormat.maximumLineLength + 1)
            + "\n    #0 0x1 (/a+0x1)\n"
        do {
            _ = try CrashReport.parse(text, format: .sanitizer)
            Issue.record("a huge line was accepted")
        } catch {
            #expect(error.code == .limitExceeded)
            #expect(error.message.hasPrefix("line 2 "))
        }
    }

    @Test func aFrameLineCutShortIsFlagged() throws {
        let report = try CrashReport.parse("""
            ==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000
                #0 0x7fcda185a237  (/tmp/libfault.so+0x2237) (BuildId: e3ae0ff073c26f50bba089c0323f76a4f9493774)
                #1 0x56269a441404  (/tmp/prog+0x24
            """)
        let frames = report.stacks[0].frames
        #expect(frames.count == 2)
        #expect(frames[0].problem == nil)
        #expect(frames[1].problem != nil)
        #expect(frames[1].line == 2)
    }

    @Test("every truncation of every report parses or throws, never traps", arguments: [
        "asan-use-after-free.txt", "glibc-backtrace.txt", "eu-stack.txt", "swift-backtrace.json",
        "swift-backtrace.txt", "tombstone-arm64.txt", "logcat-crash.txt", "ubsan-overflow.txt", "tsan-data-race.txt",
        "lsan-leak.txt", "crashsym-report.json",
    ])
    func truncation(name: String) throws {
        let bytes = Array(try Reports.text(name).utf8)
        let full = try CrashReport.parse(String(decoding: bytes, as: UTF8.self))
        for cut in 0..<bytes.count {
            let prefix = String(decoding: bytes[0..<cut], as: UTF8.self)
            if let report = try? CrashReport.parse(prefix) {
                #expect(report.frameCount <= full.frameCount)
                #expect(report.frameCount > 0)
            }
        }
    }

    @Test func randomInputNeverTraps() {
        var generator = SplitMix64(seed: 0x5EED_2026)
        let pieces = ["#", "#0 ", "0x", "7f", "(", ")", "+0x", " ", "\n", "[0x", "]", "(BuildId: ", "ab", "==1==ERROR: ",
                      "Sanitizer: ", "/lib/x.so", "\u{0}", "\u{FFFD}", "{", "\"", "pc ", "*** *** *** *** ***"]
        for _ in 0..<3000 {
            var text = ""
            for _ in 0..<Int(generator.next() % 60) { text += pieces[Int(generator.next() % UInt64(pieces.count))] }
            for format in [nil] + ReportFormat.allCases.map(Optional.some) {
                _ = try? CrashReport.parse(text, format: format)
            }
        }
        for _ in 0..<300 {
            let bytes = (0..<Int(generator.next() % 400)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            _ = try? CrashReport.parse(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func brokenJSONIsRefusedWithItsLineAndColumn() throws {
        let text = try Reports.text("swift-backtrace.json")
        do {
            _ = try CrashReport.parse(String(text.prefix(200)))
            Issue.record("a truncated crash log was accepted")
        } catch {
            #expect(error.message.hasPrefix("line 1, column 201: "))
        }
        do {
            _ = try CrashReport.parse(#"{"hello": "world"}"#)
            Issue.record("a JSON document of another kind was accepted")
        } catch {
            #expect(error.message.hasPrefix("a JSON document, but neither"))
        }
    }

    @Test func deeplyNestedJSONIsRefused() {
        let text = String(repeating: "[", count: 100_000)
        #expect(throws: FormatError.self) { try JSONValue.parse(text) }
        #expect(throws: FormatError.self) { try CrashReport.parse(text, format: .crashsymJSON) }
    }

    /// A frame's `"symbolized"` chain is kept as the sender's; hostile chains are bounded and
    /// never trap (not an array, elements without a function, huge lines, thousands of elements).
    @Test func theSendersSymbolizedChainIsKeptAndBounded() throws {
        let many = (0..<1000).map { #"{"function":"f\#($0)","line":\#($0)}"# }.joined(separator: ",")
        let text = #"{"modules":[{"name":"m","build_id":"e3ae0ff073c26f50bba089c0323f76a4f9493774"}],"stacks":[{"frames":["#
            + #"{"module_index":0,"module_offset":"0x10","symbolized":[{"function":"inner","mangled":"_Z5innerv","file":"/a.c","line":3,"column":4},{"function":"outer"}]},"#
            + #"{"module_index":0,"module_offset":"0x20","symbolized":"not an array"},"#
            + #"{"module_index":0,"module_offset":"0x30","symbolized":[{"line":5},{"function":""},{"function":"g","line":99999999999,"column":-1},7,null]},"#
            + #"{"module_index":0,"module_offset":"0x40","symbolized":["# + many + "]}]}]}"
        let report = try CrashReport.parse(text)
        let frames = report.stacks[0].frames
        #expect(frames[0].senderLocations == [
            SourceLocation(function: "inner", mangled: "_Z5innerv", file: "/a.c", line: 3, column: 4),
            SourceLocation(function: "outer", mangled: "outer", file: "", line: 0, column: 0),
        ])
        #expect(frames[1].senderLocations.isEmpty)
        #expect(frames[2].senderLocations == [SourceLocation(function: "g", mangled: "g", file: "", line: 0, column: 0)])
        #expect(frames[3].senderLocations.count == 64)
        #expect(frames[3].senderLocations.last?.function == "f63")
    }
}
