import Foundation
import SymBytes
import Synchronization
import Testing
@testable import SymReport

/// Reports in every format, each frame naming a module of its own (the hostile shape that made a
/// linear module search per frame quadratic: 92 s for a 10 MB crashsym JSON report, 12 s for
/// eu-stack). The guard compares the parse of a report with the parse of one four times its size,
/// both timed in the same run as CPU time of the parsing thread (so a busy machine does not move
/// the ratio): linear parsing costs about 4x, a quadratic one about 16x, and the test fails above
/// 9x. Each parse also runs against a very generous wall-clock deadline on its own thread, so
/// that a parser that hangs fails the test instead of stalling it. Speed itself is measured in
/// scripts/bench, not here.
@Suite struct LargeReportTests {
    /// The larger report's size; the baseline is a quarter of it.
    static let targetSize = 4 << 20
    /// Only a hang guard: a linear parse of 4 MB takes well under a second.
    static let deadline: Double = 300
    /// Above this ratio of CPU times (4x the input) the parse is taken as worse than linear.
    static let maximumRatio = 9.0

    /// A build-id of 20 bytes made from `n`.
    static func buildID(_ n: Int) -> String {
        let hex = String(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
        return String(repeating: "0", count: 40 - hex.count) + hex
    }

    /// Lines made by `line(n)` for n = 0, 1, … until the text reaches the target size.
    static func lines(size targetSize: Int, header: String = "", footer: (Int) -> String = { _ in "" }, _ line: (Int) -> String) -> (text: String, count: Int) {
        var text = header
        var count = 0
        text.reserveCapacity(targetSize + 1 << 16)
        while text.utf8.count < targetSize {
            text += line(count)
            text += "\n"
            count += 1
        }
        return (text + footer(count), count)
    }

    /// Address of module `n`: modules are 0x10000 bytes apart.
    static func base(_ n: Int) -> UInt64 { 0x7f00_0000_0000 + UInt64(n) << 16 }

    static func report(_ format: ReportFormat, size targetSize: Int) -> (text: String, frames: Int) {
        switch format {
        case .sanitizer:
            let made = lines(size: targetSize, header: "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x0\n") { n in
                "    #\(n) 0x\(String(base(n) + 0x10, radix: 16))  (/lib/m\(n).so+0x10) (BuildId: \(buildID(n)))"
            }
            return (made.text, made.count)
        case .glibc:
            let made = lines(size: targetSize) { n in "/lib/m\(n).so(+0x10) [0x\(String(base(n) + 0x10, radix: 16))]" }
            return (made.text, made.count)
        case .tombstone:
            let made = lines(size: targetSize, header: "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\nbacktrace:\n") { n in
                "      #\(n % 100 < 10 ? "0" : "")\(n % 100) pc 0000000000000010  /system/lib64/m\(n).so (BuildId: \(buildID(n)))"
            }
            return (made.text, made.count)
        case .euStack:
            // Half the text is the module map, half the frames with their `-b` lines; every
            // frame has a build-id of its own, half of them absent from the map.
            var text = "PID 1 - core module memory map\n"
            var modules = 0
            while text.utf8.count < targetSize / 2 {
                text += "0x\(String(base(modules), radix: 16))-0x\(String(base(modules) + 0x8000, radix: 16)) m\(modules).so\n"
                text += "  [\(buildID(modules))]\n  /lib/m\(modules).so\n  -\n"
                modules += 1
            }
            text += "PID 1 - core\nTID 1:\n"
            var frames = 0, round = 0
            while text.utf8.count < targetSize {
                let n = round % 2 == 0 ? round / 2 : modules + round
                round += 1
                text += "#\(frames)  0x\(String(base(n) + 0x10, radix: 16)) f\n"
                text += "    [\(buildID(n))]@0x\(String(base(n), radix: 16))+0x10\n"
                // And a frame without `-b`, placed by the map.
                text += "#\(frames + 1)  0x\(String(base(round % modules) + 0x20, radix: 16)) g\n"
                frames += 2
            }
            return (text, frames)
        case .swiftText:
            var text = "*** Program crashed: Bad pointer dereference at 0x0 ***\n\nThread 0 crashed:\n\n"
            var count = 0
            var images = "\n\nImages (\(0) omitted):\n\n"
            while text.utf8.count + images.utf8.count < targetSize {
                text += "\(count) [ra] 0x\(String(base(count) + 0x10, radix: 16)) in m\(count)\n"
                images += "0x\(String(base(count), radix: 16))–0x\(String(base(count) + 0x8000, radix: 16)) \(buildID(count)) m\(count) /lib/m\(count).so\n"
                count += 1
            }
            return (text + images, count)
        case .swiftJSON:
            var frames: [String] = [], images: [String] = []
            var size = 0
            while size < targetSize {
                let n = frames.count
                let frame = #"{"kind":"returnAddress","address":"0x\#(String(base(n) + 0x10, radix: 16))"}"#
                let image = #"{"name":"m\#(n)","buildId":"\#(buildID(n))","path":"/lib/m\#(n).so","baseAddress":"0x\#(String(base(n), radix: 16))","endOfText":"0x\#(String(base(n) + 0x8000, radix: 16))"}"#
                frames.append(frame)
                images.append(image)
                size += frame.utf8.count + image.utf8.count + 2
            }
            let text = #"{"timestamp":"2026-01-01T00:00:00Z","kind":"crashReport","description":"Bad pointer","threads":[{"crashed":true,"frames":[\#(frames.joined(separator: ","))]}],"images":[\#(images.joined(separator: ","))]}"#
            return (text, frames.count)
        case .crashsymJSON:
            // Two thirds of the frames name a new module by name; the rest are placed by address.
            var frames: [String] = [], modules: [String] = []
            var size = 0
            while size < targetSize {
                let n = frames.count
                let frame: String
                if n % 3 == 2 {
                    let module = #"{"name":"r\#(n).so","path":"/lib/r\#(n).so","load_address":"0x\#(String(base(n), radix: 16))","size":"0x8000"}"#
                    modules.append(module)
                    size += module.utf8.count + 1
                    frame = #"{"index":\#(n),"address":"0x\#(String(base(n) + 0x10, radix: 16))"}"#
                } else {
                    frame = #"{"index":\#(n),"module":"/lib/m\#(n).so","build_id":"\#(buildID(n))","module_offset":"0x10"}"#
                }
                frames.append(frame)
                size += frame.utf8.count + 1
            }
            let text = #"{"format":"sanitizer","modules":[\#(modules.joined(separator: ","))],"stacks":[{"name":"big","crashed":true,"frames":[\#(frames.joined(separator: ","))]}]}"#
            return (text, frames.count)
        case .core, .minidump:
            // Binary files, walked rather than parsed (CoreFileTests, MinidumpTests): not among the arguments.
            return ("", 0)
        }
    }

    /// Parses `text` on a thread of its own; nil past the deadline (the thread is left to end).
    /// Returns the result and the CPU time the parsing thread used, in seconds.
    static func parse(_ text: String) -> (result: Result<CrashReport, FormatError>, cpuSeconds: Double)? {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Thread {
            let start = threadCPUTime()
            let result: Result<CrashReport, FormatError>
            do throws(FormatError) { result = .success(try CrashReport.parse(text)) } catch { result = .failure(error) }
            let used = threadCPUTime() - start
            outcome.value.withLock { $0 = (result, used) }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + deadline) == .success else { return nil }
        return outcome.value.withLock { $0 }
    }

    /// CPU time used so far by the calling thread, in seconds.
    static func threadCPUTime() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    @Test("a report naming a module per frame parses in linear time (4x the input, under 9x the CPU time)",
          arguments: ReportFormat.allCases.filter { !$0.isBinary })
    func largeReport(format: ReportFormat) throws {
        let (small, _) = Self.report(format, size: Self.targetSize / 4)
        let (text, frames) = Self.report(format, size: Self.targetSize)
        #expect(text.utf8.count >= Self.targetSize)
        // The best of three runs of each size, so that one preempted or cold run does not decide.
        var smallTimes: [Double] = [], largeTimes: [Double] = []
        var last: Result<CrashReport, FormatError>?
        for _ in 0..<3 {
            guard let smallParse = Self.parse(small), let largeParse = Self.parse(text) else {
                Issue.record("parsing a \(text.utf8.count >> 20) MB \(format.rawValue) report took over \(Self.deadline) s")
                return
            }
            smallTimes.append(smallParse.cpuSeconds)
            largeTimes.append(largeParse.cpuSeconds)
            last = largeParse.result
        }
        // A floor of 1 ms keeps a parse too quick to time from making the ratio meaningless.
        let ratio = max(largeTimes.min()!, 0.001) / max(smallTimes.min()!, 0.001)
        #expect(ratio < Self.maximumRatio,
                "\(format.rawValue): 4x the input took \(ratio)x the CPU time (\(smallTimes.min()!) s -> \(largeTimes.min()!) s)")
        let report = try #require(last).get()
        #expect(report.format == format)
        #expect(report.frameCount == frames)
        // Every frame found its own module.
        let placed = report.stacks.flatMap(\.frames).filter { $0.module != nil }.count
        #expect(placed == frames)
        #expect(report.modules.count >= frames / 2)
    }
}

/// The parse's result and CPU time, handed from its thread to the test.
final class Outcome: Sendable {
    let value = Mutex<(Result<CrashReport, FormatError>, Double)?>(nil)
}
