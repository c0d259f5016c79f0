import TestSupport
import Foundation
import Testing
@testable import SymReport

/// `ReportStream`: a stream of lines cut into text to print at once and reports to symbolicate,
/// each as soon as it ends, with the same frames as the whole input read as one report.
@Suite struct ReportStreamTests {
    static let textFixtures = [
        "asan-use-after-free.txt", "ubsan-overflow.txt", "tsan-data-race.txt", "lsan-leak.txt",
        "glibc-backtrace.txt", "tombstone-arm64.txt", "logcat-crash.txt", "swift-backtrace.txt",
        "eu-stack.txt", "eu-stack-nopie.txt", "eu-stack-core.txt", "eu-stack-core-threads.txt",
        "eu-stack-core-threads-quiet.txt", "eu-stack-core-plain.txt", "eu-stack-core-quiet.txt",
        "eu-stack-core-verbose.txt", "eu-stack-core-verbose-b.txt", "eu-stack-process-quiet.txt",
    ]

    /// Feeds `lines` one by one, then finishes; returns every piece with the index of its first line.
    static func split(_ lines: [Substring], format: ReportFormat? = nil) -> [(first: Int, piece: ReportStream.Piece)] {
        var stream = ReportStream(format: format)
        var pieces: [(Int, ReportStream.Piece)] = []
        var next = 0
        func take(_ made: [ReportStream.Piece]) {
            for piece in made {
                pieces.append((next, piece))
                next += Self.text(of: piece).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            }
        }
        for line in lines { take(stream.feed(line)) }
        take(stream.finish())
        return pieces
    }

    static func text(of piece: ReportStream.Piece) -> String {
        switch piece {
        case .text(let text), .report(let text): text
        }
    }

    @Test("pieces give back every line, and frames as the whole report has them", arguments: textFixtures)
    func piecesMatchTheWholeReport(name: String) throws {
        let text = try Reports.text(name)
        let lines = try CrashReport.splitLines(text)
        let whole = try CrashReport.parse(text)
        let pieces = Self.split(lines)
        // Every line, once, in order.
        #expect(pieces.map { Self.text(of: $0.piece) }.joined() == lines.map { $0 + "\n" }.joined())
        // Each frame of the whole report is a frame of its piece, read the same way.
        var frames: [Int: (frame: ReportFrame, module: ReportModule?)] = [:]
        for (first, piece) in pieces {
            guard case .report(let text) = piece else { continue }
            let report = try CrashReport.parse(text)
            for frame in report.stacks.flatMap(\.frames) {
                guard let line = frame.line else { continue }
                frames[first + line] = (frame, frame.module.map { report.modules[$0] })
            }
        }
        let wholeFrames = whole.stacks.flatMap(\.frames)
        #expect(frames.count == wholeFrames.count)
        for frame in wholeFrames {
            let line = try #require(frame.line)
            let piece = try #require(frames[line], "line \(line + 1) of \(name) is no frame in its piece")
            #expect(piece.frame.address == frame.address && piece.frame.moduleOffset == frame.moduleOffset)
            #expect(piece.frame.convention == frame.convention && piece.frame.offsetBase == frame.offsetBase)
            #expect(piece.frame.problem == frame.problem)
            let module = frame.module.map { whole.modules[$0] }
            #expect(piece.module?.path == module?.path && piece.module?.buildID == module?.buildID)
            #expect(piece.module?.loadAddress == module?.loadAddress)
        }
    }

    @Test func aReportIsHandedOverWhenTheNextLineComes() throws {
        let report = try CrashReport.splitLines(try Reports.text("glibc-backtrace.txt"))
        var stream = ReportStream()
        #expect(stream.feed("app: starting") == [.text("app: starting\n")])
        for line in report { #expect(stream.feed(line).isEmpty) }
        #expect(stream.isCollecting)
        let pieces = stream.feed("app: restarting")
        #expect(pieces == [.report(report.map { $0 + "\n" }.joined()), .text("app: restarting\n")])
        #expect(!stream.isCollecting)
        #expect(stream.finish().isEmpty)
    }

    @Test func aPauseHandsOverAReportWithFrames() throws {
        var stream = ReportStream()
        let headline = "==7==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000"
        #expect(stream.feed(Substring(headline)).isEmpty)
        // No frame yet: a pause releases the held line as text.
        #expect(stream.pause() == [.text(headline + "\n")])
        let frame = "    #0 0x55d0c2a1b2c4  (/app/prog+0x1b2c4) (BuildId: 5f0e4b0c3d2a19887766554433221100aabbccdd)"
        #expect(stream.feed(Substring(frame)).isEmpty)
        #expect(stream.pause() == [.report(frame + "\n")])
        #expect(stream.pause().isEmpty)
    }

    @Test func euStackThreadsAndSwiftImagesStayInOneReport() throws {
        for name in ["eu-stack-core-threads.txt", "swift-backtrace.txt", "eu-stack.txt"] {
            let lines = try CrashReport.splitLines(try Reports.text(name))
            let reports = Self.split(lines).filter { if case .report = $0.piece { true } else { false } }
            #expect(reports.count == 1, "\(name)")
            // A pause after the frames of one eu-stack thread does not cut the report.
        }
        let lines = try CrashReport.splitLines(try Reports.text("eu-stack-core-verbose.txt"))
        var stream = ReportStream()
        for line in lines.prefix(while: { !$0.hasPrefix("#") }) { #expect(stream.feed(line).isEmpty) }
        #expect(stream.pause().isEmpty)  // the module map waits for its frames
    }

    @Test func aLogWithSeveralReportsIsCutBetweenThem() throws {
        let asan = try Reports.text("asan-use-after-free.txt")
        let glibc = try Reports.text("glibc-backtrace.txt")
        let euStack = try Reports.text("eu-stack-core.txt")
        let log = "boot\n" + asan + "between\n" + glibc + "after glibc\n" + euStack + "end\n"
        let pieces = Self.split(try CrashReport.splitLines(log))
        let formats = try pieces.compactMap { piece -> ReportFormat? in
            guard case .report(let text) = piece.piece else { return nil }
            return try CrashReport.parse(text).format
        }
        // The ASan report's three stacks are three pieces (a blank line ends each one's frames).
        #expect(formats == [.sanitizer, .sanitizer, .sanitizer, .glibc, .euStack])
        #expect(pieces.first?.piece == .text("boot\n"))
        #expect(pieces.last?.piece == .text("end\n"))
        #expect(pieces.map { Self.text(of: $0.piece) }.joined() == log)
    }

    @Test func aForcedFormatOnlyRecognisesItsOwnReports() throws {
        let glibc = try CrashReport.splitLines(try Reports.text("glibc-backtrace.txt"))
        let pieces = Self.split(glibc, format: .sanitizer)
        #expect(pieces.allSatisfy { if case .text = $0.piece { true } else { false } })
    }

    @Test func randomLinesNeverTrapAndAreAllGivenBack() {
        var generator = SplitMix64(seed: 0x5EED_0005)
        let pieces = ["#0 ", "0x7f", "  ", "PID 1 - core", "TID 3:", "*** Program crashed: x", "Images (1 omitted):",
                      "0x1000-0x2000 a", "(/a+0x1)", "[0x1]", "/lib/a.so(+0x1) [0x2]", "==1==ERROR: AddressSanitizer: x",
                      "#00 pc 0001  /a.so", "*** *** *** *** ***", "", "- 1", "    [ab]@0x1+0x2"]
        for _ in 0..<500 {
            var lines: [Substring] = []
            for _ in 0..<Int(generator.next() % 40) {
                var line = ""
                for _ in 0..<Int(generator.next() % 4) { line += pieces[Int(generator.next() % UInt64(pieces.count))] }
                lines.append(Substring(line))
            }
            var stream = ReportStream()
            var out = ""
            for line in lines {
                for piece in stream.feed(line) { out += Self.text(of: piece) }
                if generator.next() % 5 == 0 { for piece in stream.pause() { out += Self.text(of: piece) } }
            }
            for piece in stream.finish() { out += Self.text(of: piece) }
            #expect(out == lines.map { $0 + "\n" }.joined())
        }
    }
}
