import SymBytes
import SymReport
import Testing

/// How a walked frame was found (`found_by`): read from crashsym JSON, written back, printed in
/// text; absent everywhere for frames no walk found, so those documents stay byte for byte.
@Suite struct FoundByTests {
    static let document = #"{"format":"core","modules":[{"name":"app","path":"/bin/app","load_address":"0x1000","size":"0x1000"}],"stacks":[{"name":"TID 7","thread":"7","crashed":true,"frames":[{"index":0,"module_index":0,"module_offset":"0x10","found_by":"context"},{"index":1,"module_index":0,"module_offset":"0x20","address_kind":"return-address","found_by":"scan"},{"index":2,"module_index":0,"module_offset":"0x30","address_kind":"return-address"}]}]}"#

    static func unresolved(_ report: CrashReport) -> SymbolicatedReport {
        SymbolicatedReport(report: report, frames: report.stacks.map { $0.frames.map { _ in FrameResolution(status: .noSymbols) } })
    }

    @Test("Read from JSON, every value; written back only where present; text prints a Found by line")
    func roundTrip() throws {
        let report = try CrashReport.parse(Self.document)
        #expect(report.stacks[0].frames.map(\.foundBy) == [.context, .scan, nil])
        let json = ReportWriter.json(Self.unresolved(report))
        #expect(json.contains(#""found_by":"context""#))
        #expect(json.contains(#""found_by":"scan""#))
        // Two frames say it, the third does not.
        #expect(json.components(separatedBy: #""found_by""#).count == 3)
        let again = try CrashReport.parse(json)
        #expect(again.stacks[0].frames.map(\.foundBy) == [.context, .scan, nil])
        let text = ReportWriter.text(Self.unresolved(report))
        #expect(text.components(separatedBy: "    Found by: ").count == 3)
        #expect(text.contains("    Found by: scan\n"))
        for value in ReportFrame.FoundBy.allCases {
            let one = Self.document.replacingOccurrences(of: #""found_by":"scan""#, with: #""found_by":"\#(value.rawValue)""#)
            #expect(try CrashReport.parse(one).stacks[0].frames[1].foundBy == value)
        }
    }

    @Test("An unknown found_by is an error naming the frame and the values")
    func unknownValue() {
        let bad = Self.document.replacingOccurrences(of: #""found_by":"scan""#, with: #""found_by":"guess""#)
        #expect(throws: FormatError.self) { try CrashReport.parse(bad) }
        do {
            _ = try CrashReport.parse(bad)
        } catch {
            #expect(error.message.contains("stacks[0].frames[1].found_by 'guess'"))
            #expect(error.message.contains("frame-pointer"))
        }
    }

    @Test("A report no walk found: no found_by member, no Found by line (output unchanged)")
    func absent() throws {
        let text = "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x0\n    #0 0x4011d6 in main (/bin/app+0x11d6)\n"
        let report = try CrashReport.parse(text)
        #expect(report.stacks.allSatisfy { $0.frames.allSatisfy { $0.foundBy == nil } })
        #expect(!ReportWriter.json(Self.unresolved(report)).contains("found_by"))
        #expect(!ReportWriter.text(Self.unresolved(report)).contains("Found by"))
    }

    @Test("Binary formats: never detected in text; parsing text as one says to pass the file")
    func binaryFormats() {
        #expect(ReportFormat.core.isBinary && ReportFormat.minidump.isBinary)
        #expect(ReportFormat.allCases.filter(\.isBinary) == [.core, .minidump])
        #expect(ReportFormat.detect("PID 1 - core\nTID 1:\n#0  0x0000000000401000 main\n") == .euStack)
        #expect(throws: FormatError.self) { try CrashReport.parse("PID 1 - core\nTID 1:\n#0  0x1 main\n", format: .core) }
    }
}
