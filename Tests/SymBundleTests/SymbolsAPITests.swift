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
}
