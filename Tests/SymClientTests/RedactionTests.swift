import Testing
import SymClient

/// Issue 19, item 22: a password in the server URL is replaced by `***` wherever a URL is printed.
@Suite struct RedactionTests {
    @Test("redacting", arguments: [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://ci:pa55@symbols.example.com/base", "https://ci:***@symbols.example.com/base"),
        ("https://ci@symbols.example.com", "https://ci@symbols.example.com"),
        ("http://u:p@ss:w0rd@host:1/x?y=a@b#c@d", "http://u:***@host:1/x?y=a@b#c@d"),
        ("http://host/path@not-userinfo", "http://host/path@not-userinfo"),
        ("not a url at all: secret@x", "not a url at all: secret@x"),
    ])
    func redacting(url: String, shown: String) {
        #expect(ClientConfiguration.redacting(url) == shown)
    }
}
