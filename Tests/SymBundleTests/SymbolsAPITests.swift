import Foundation
import Testing
import SymBundle

/// The API bodies are shared by client and server: what one encodes the other must decode, and the
/// server's lenient fields must take their documented defaults.
@Suite struct SymbolsAPITests {
    @Test func aMissingSymbolsRequestRoundTrips() throws {
        let request = MissingSymbolsRequest(version: "1.4.2", package: "com.example.app", platform: "android", modules: [
            .init(buildID: "aa11", name: "libfoo.so", arch: "aarch64"),
        ])
        let data = try JSONEncoder().encode(request)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"build_id\":\"aa11\""))
        #expect(try JSONDecoder().decode(MissingSymbolsRequest.self, from: data) == request)
    }

    @Test func optionalRequestFieldsTakeTheirDefaults() throws {
        let json = #"{"version":"2","modules":[{"build_id":"bb22"}]}"#
        let request = try JSONDecoder().decode(MissingSymbolsRequest.self, from: Data(json.utf8))
        #expect(request.package == "")
        #expect(request.platform == "linux")
        #expect(request.modules == [.init(buildID: "bb22", name: "", arch: "")])
    }

    @Test func requiredRequestFieldsAreRequired() {
        for json in [#"{"modules":[]}"#, #"{"version":"1"}"#, #"{"version":"1","modules":[{"name":"x"}]}"#,
                     #"{"version":1,"modules":[]}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(MissingSymbolsRequest.self, from: Data(json.utf8)) }
        }
    }

    @Test func answersUseTheDocumentedKeys() throws {
        let upload = String(decoding: try JSONEncoder().encode(UploadResponse(version: "1", stored: ["aa"], alreadyPresent: ["bb"])),
                            as: UTF8.self)
        #expect(upload.contains("\"already_present\":[\"bb\"]"))
        let error = try JSONDecoder().decode(ErrorResponse.self, from: Data(#"{"error":{"code":"unauthorized","message":"no"}}"#.utf8))
        #expect(error == ErrorResponse(code: "unauthorized", message: "no"))
    }

    /// Issue 19, item 11: the fields added for improvable modules are optional both ways, so
    /// clients and servers from before them keep working.
    @Test func improvementFieldsAreOptionalBothWays() throws {
        let oldMissing = try JSONDecoder().decode(MissingSymbolsResponse.self, from: Data(#"{"missing":["aa"],"present":["bb"]}"#.utf8))
        #expect(oldMissing == MissingSymbolsResponse(missing: ["aa"], present: ["bb"], improvable: []))
        let oldUpload = try JSONDecoder().decode(UploadResponse.self,
                                                 from: Data(#"{"version":"1","stored":["aa"],"already_present":[]}"#.utf8))
        #expect(oldUpload.improved == [])
        let request = MissingSymbolsRequest(version: "1", package: "", platform: "linux", modules: [
            .init(buildID: "aa", name: "a", arch: "x86_64"),
            .init(buildID: "bb", name: "b", arch: "x86_64", hasDWARF: true, hasDebugFile: false),
        ])
        let text = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        #expect(!text.contains(#""build_id":"aa","has_dwarf""#))
        #expect(try JSONDecoder().decode(MissingSymbolsRequest.self, from: Data(text.utf8)) == request)
        let upload = String(decoding: try JSONEncoder().encode(UploadResponse(version: "1", stored: ["aa"], improved: ["aa"],
                                                                              alreadyPresent: [])), as: UTF8.self)
        #expect(upload.contains(#""improved":["aa"]"#))
    }

    /// The order in which a table improves a stored one: DWARF first, then functions, line rows, symbols.
    @Test func aTableImprovesOnlyOnWhatCountsFirst() {
        let dynsym = TableContent(functions: 0, lineRows: 0, symbols: 12)
        let symtab = TableContent(functions: 0, lineRows: 0, symbols: 40)
        let dwarf = TableContent(functions: 10, lineRows: 300, symbols: 5)
        let richer = TableContent(functions: 11, lineRows: 10, symbols: 0)
        #expect(symtab.improves(on: dynsym) && !dynsym.improves(on: symtab))
        #expect(dwarf.improves(on: symtab) && !symtab.improves(on: dwarf))
        #expect(richer.improves(on: dwarf) && !dwarf.improves(on: richer))
        #expect(!dwarf.improves(on: dwarf))
        #expect(dwarf.hasDWARF && !symtab.hasDWARF)
    }

    @Test("a manifest's package and symbols/missing share one rule", arguments: [
        ("", true), ("com.example.app", true), ("名前.app", true), (String(repeating: "p", count: 255), true),
        (String(repeating: "p", count: 256), false), ("a\u{0}b", false), ("a\nb", false), ("a\tb", false),
        ("a\u{1b}[2J", false), ("a\u{85}b", false), ("a\u{2028}b", false),
    ])
    func packageRule(package: String, valid: Bool) {
        #expect(BundleManifest.isPackage(package) == valid)
    }
}
