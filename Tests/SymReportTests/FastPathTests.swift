import TestSupport
import Foundation
import SymBytes
import Testing
@testable import SymReport

/// The parser's and writer's fast paths against their plain definitions.
@Suite struct FastPathTests {
    /// The escaping check, eight bytes at a time, agrees with a byte-by-byte reading for every
    /// position of every byte that needs escaping, and for random text.
    @Test func escapingCheckAgreesWithTheByteByByteRule() {
        func naive(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c } }
        func fast(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBufferPointer { needsJSONEscaping($0) } }
        var checked = 0
        var mismatches: [[UInt8]] = []
        for length in 0..<24 {
            let clean = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(!fast(clean))
            for position in 0..<length {
                // Every byte value at every position, around neighbours that borrow (0x00, 0x80, 0xff).
                for value in UInt8.min...UInt8.max {
                    for neighbour: UInt8 in [UInt8(ascii: "a"), 0x21, 0x80, 0xff] {
                        var bytes = [UInt8](repeating: neighbour, count: length)
                        bytes[position] = value
                        if fast(bytes) != naive(bytes) { mismatches.append(bytes) }
                        checked += 1
                    }
                }
            }
        }
        var random = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &random)).map { _ in UInt8.random(in: 0x1c...0xff, using: &random) }
            if fast(bytes) != naive(bytes) { mismatches.append(bytes) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(checked > 100_000)
    }

    /// Frames naming the same module path with and without a build-id, with another build-id,
    /// and in another case of hex digits: the module list is what `moduleIndex` alone gives.
    @Test func repeatedModulesOnFrameLinesResolveLikeTheModuleIndex() throws {
        let id = "5f0e4b0c3d2a19887766554433221100aabbccdd"
        let frames = [
            "    #0 0x55d0c2a1b2c4  (/app/prog+0x1b2c4)",
            "    #1 0x55d0c2a1b2c8  (/app/prog+0x1b2c8) (BuildId: \(id.uppercased()))",
            "    #2 0x7f0000001000  (/lib/libc.so.6+0x1000) (BuildId: 00112233)",
            "    #3 0x55d0c2a1b2cc  (/app/prog+0x1b2cc) (BuildId: \(id))",
            "    #4 0x7f0000002000  (/lib/libc.so.6+0x2000) (BuildId: 44556677)",
            "    #5 0x55d0c2a1b2d0  (/app/prog+0x1b2d0)",
            "    #6 0x7f0000003000  (/lib/libc.so.6+0x3000) (BuildId: 0011zz33)",
        ]
        let report = try CrashReport.parse("==1==ERROR: AddressSanitizer: SEGV on unknown address\n" + frames.joined(separator: "\n") + "\n")
        #expect(report.modules.map(\.path) == ["/app/prog", "/lib/libc.so.6"])
        // The first build-id printed for a path fills it; later ones do not replace it.
        #expect(report.modules.map(\.buildID) == [id, "00112233"])
        #expect(report.stacks[0].frames.map(\.module) == [0, 0, 1, 0, 1, 0, 1])
        #expect(report.stacks[0].frames.map(\.moduleOffset) == [0x1b2c4, 0x1b2c8, 0x1000, 0x1b2cc, 0x2000, 0x1b2d0, 0x3000])
        // More modules than the memo keeps: each still gets its own entry.
        let many = (0..<100).map { "    #\($0) 0x\(String(0x1000 + $0, radix: 16))  (/lib/m\($0 % 50).so+0x10) (BuildId: \(String(format: "%08x", $0 % 50)))" }
        let wide = try CrashReport.parse("==1==ERROR: AddressSanitizer: SEGV on unknown address\n" + many.joined(separator: "\n") + "\n")
        #expect(wide.modules.count == 50)
        #expect(wide.stacks[0].frames.map(\.module) == (0..<100).map { $0 % 50 })
        #expect(wide.modules.map(\.buildID) == (0..<50).map { String(format: "%08x", $0) })
    }
}

/// Chains rendered once (`LocationChain`) print exactly what the writers print from the locations.
@Suite struct LocationChainTests {
    static let report = """
        ==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000
            #0 0x7f0000001010  (/lib/libx.so+0x1010) (BuildId: 00112233445566778899)
        \t#1 0x7f0000001020  (/lib/libx.so+0x1020) (BuildId: 00112233445566778899)
        """
    /// Names and paths that need escaping, an unknown file, a line without a column.
    static let locations = [
        SourceLocation(function: "ns::f<\"q\">(char\\)", mangled: "_Z1fIXadL_Z1qEEEvc", file: "/src/a\tb.c", line: 3, column: 7),
        SourceLocation(function: "inner", mangled: "inner", file: "", line: 12, column: 0),
        SourceLocation(function: "outer", mangled: "outer", file: "", line: 0, column: 0),
    ]

    static func result(_ renderings: LocationChain.Renderings?) throws -> SymbolicatedReport {
        let report = try CrashReport.parse(Self.report)
        let frames = report.stacks.map { stack in
            stack.frames.map { _ in
                renderings.map { FrameResolution(status: .ok, chain: LocationChain(Self.locations, renderings: $0)) }
                    ?? FrameResolution(status: .ok, locations: Self.locations)
            }
        }
        return SymbolicatedReport(report: report, frames: frames)
    }

    @Test func everyRenderingPrintsTheSame() throws {
        let text = ReportWriter.text(try Self.result(nil))
        let json = ReportWriter.json(try Self.result(nil))
        for renderings: LocationChain.Renderings in [.text, .json, .all, []] {
            #expect(ReportWriter.text(try Self.result(renderings)) == text)
            #expect(ReportWriter.json(try Self.result(renderings)) == json)
        }
        // The text form: ` in ` on the frame line, the line's indentation before each `inlined into`.
        #expect(text.contains("(BuildId: 00112233445566778899) in ns::f<\"q\">(char\\) /src/a\tb.c:3:7\n        inlined into inner ??:12\n        inlined into outer\n"))
        #expect(text.contains("(BuildId: 00112233445566778899) in ns::f<\"q\">(char\\) /src/a\tb.c:3:7\n\t    inlined into inner ??:12\n\t    inlined into outer\n"))
        // The JSON form reads back as the locations.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let stacks = try #require(object["stacks"] as? [[String: Any]])
        let frames = try #require(stacks.first?["frames"] as? [[String: Any]])
        #expect(frames.count == 2)
        for frame in frames {
            let symbolized = try #require(frame["symbolized"] as? [[String: Any]])
            #expect(symbolized.map { $0["function"] as? String } == Self.locations.map(\.function))
            #expect(symbolized.map { $0["mangled"] as? String } == Self.locations.map(\.mangled))
            #expect(symbolized.map { $0["file"] as? String } == Self.locations.map(\.file))
            #expect(symbolized.map { $0["line"] as? Int } == Self.locations.map { Int($0.line) })
            #expect(symbolized.map { $0["column"] as? Int } == Self.locations.map { Int($0.column) })
        }
    }

    @Test func resolutionsCompareByWhatTheySay() {
        let shared = LocationChain(Self.locations)
        #expect(FrameResolution(status: .ok, chain: shared) == FrameResolution(status: .ok, locations: Self.locations))
        #expect(FrameResolution(status: .ok, chain: shared) != FrameResolution(status: .ok, locations: Array(Self.locations.dropLast())))
        #expect(FrameResolution(status: .ok, chain: nil) == FrameResolution(status: .ok, locations: []))
        var resolution = FrameResolution(status: .ok, chain: shared)
        resolution.locations = []
        #expect(resolution.chain == nil)
    }

    /// A resolution's source and explanation are its module's facts, shared by reference; setting
    /// one keeps the other and never changes another frame's facts.
    @Test func moduleFactsAreSharedAndSetOnePerResolution() {
        let facts = ModuleFacts(source: "/symbols/app.csym", explanation: ["--symbols /symbols: no file with build-id 00"])
        var first = FrameResolution(status: .ok, moduleFacts: facts)
        let second = FrameResolution(status: .ok, moduleFacts: facts)
        #expect(first.moduleFacts === second.moduleFacts)
        #expect(first == FrameResolution(status: .ok, source: "/symbols/app.csym",
                                         explanation: ["--symbols /symbols: no file with build-id 00"]))
        first.source = "/other.csym"
        #expect(first.source == "/other.csym" && first.explanation == facts.explanation)
        first.explanation = []
        #expect(first.source == "/other.csym" && first.explanation.isEmpty)
        #expect(second.source == "/symbols/app.csym" && second.explanation.count == 1)
        #expect(FrameResolution(status: .noModule).source == nil && FrameResolution(status: .noModule).explanation.isEmpty)
    }

    /// Text `--explain` shows a resolved frame's fetch from a server by the step's kind, never by
    /// its text: a place tried whose English happens to read "fetched from" stays unshown.
    @Test func explainShowsFetchesByKindNotByText() {
        let report = CrashReport(format: .crashsymJSON, modules: [ReportModule(path: "/bin/app")],
                                 stacks: [ReportStack(frames: [ReportFrame(index: 0, address: 0x401136, module: 0),
                                                               ReportFrame(index: 1, address: 0x401140, module: 0)])])
        let tried = ModuleFacts(source: "/cache/app.csym", steps: [ExplanationStep(.tried, "fetched from somewhere: looks like a fetch")])
        let server = SymbolCandidate(source: SymbolCandidate.Source(rawValue: "server"), location: "/cache/app.csym", outcome: .fetched(server: "https://symbols.example", earlier: false))
        let fetched = ModuleFacts(source: "/cache/app.csym", candidates: [server])
        #expect(fetched.steps == [ExplanationStep(.fetched, "fetched from https://symbols.example, build-id matches: /cache/app.csym")])
        let frames = [[FrameResolution(status: .ok, moduleFacts: tried), FrameResolution(status: .ok, moduleFacts: fetched)]]
        let text = ReportWriter.text(SymbolicatedReport(report: report, frames: frames), explain: true)
        #expect(!text.contains("looks like a fetch"), "\(text)")
        #expect(text.contains("tried: fetched from https://symbols.example, build-id matches: /cache/app.csym"), "\(text)")
    }

    /// Stack headers name their thread: the word after `thread`/`Thread` when it starts with `T`,
    /// up to a comma or colon, whatever the spaces.
    @Test(arguments: [
        ("WRITE of size 4 at 0x7b0400000000 by thread T1:", "T1"),
        ("Thread T12 (tid=5, running) created by T3 here:", "T12"),
        ("Previous write of size 8  by  thread   T7, then more", "T7"),
        ("threads T1 and Thread main", nil),
        ("freed by thread Tx here", "Tx"),
        ("READ of size 1 at 0x1 thread T0", "T0"),
    ] as [(String, String?)])
    func stackHeadersNameTheirThread(header: String, thread: String?) throws {
        let report = try CrashReport.parse("==1==ERROR: AddressSanitizer: SEGV on unknown address 0x0\n\(header)\n    #0 0x10  (/lib/libx.so+0x10)\n",
                                           format: .sanitizer)
        #expect(report.stacks.last?.thread == thread)
    }
}
