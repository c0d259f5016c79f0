import Foundation
import SymHTTP
import Testing
import TestSupport

/// The one percent-encoder (SymHTTP `PercentEncoding`), checked by hand on reserved characters and
/// against Python's `urllib.parse.quote` on seeded random text.
@Suite struct PercentEncodingTests {
    @Test("unreserved characters stay in both parts")
    func unreserved() {
        let text = "ABCXYZabcxyz0189-._~"
        #expect(PercentEncoding.encode(text, as: .pathSegment) == text)
        #expect(PercentEncoding.encode(text, as: .queryComponent) == text)
        #expect(PercentEncoding.encode(text, as: .unreservedOnly) == text)
        #expect((0...255).filter { PercentEncoding.isUnreserved(UInt8($0)) }.count == 66)
    }

    @Test("a path segment encodes / ? # and keeps sub-delims, : and @; a query component encodes & = + and keeps / and ?")
    func reserved() {
        let text = ":/?#[]@!$&'()*+,;="
        #expect(PercentEncoding.encode(text, as: .pathSegment) == ":%2F%3F%23%5B%5D@!$&'()*+,;=")
        #expect(PercentEncoding.encode(text, as: .queryComponent) == ":/?%23%5B%5D@!$%26'()*%2B,;%3D")
        #expect(PercentEncoding.encode(text, as: .unreservedOnly) == "%3A%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
    }

    @Test("%, space, + and control bytes", arguments: [PercentEncoding.Part.pathSegment, .queryComponent, .unreservedOnly])
    func escapes(part: PercentEncoding.Part) {
        #expect(PercentEncoding.encode("100%", as: part) == "100%25")
        #expect(PercentEncoding.encode("%2F", as: part) == "%252F")  // already-encoded text is encoded again
        #expect(PercentEncoding.encode("a b", as: part) == "a%20b")  // never `+`: a path keeps `+` literal
        #expect(PercentEncoding.encode("\u{0}\t\n\u{7f}\"<>\\^`{|}", as: part) == "%00%09%0A%7F%22%3C%3E%5C%5E%60%7B%7C%7D")
        #expect(PercentEncoding.encode("", as: part) == "")
    }

    @Test("UTF-8 bytes, upper-case hex", arguments: [PercentEncoding.Part.pathSegment, .queryComponent, .unreservedOnly])
    func utf8(part: PercentEncoding.Part) {
        #expect(PercentEncoding.encode("é", as: part) == "%C3%A9")
        #expect(PercentEncoding.encode("日本", as: part) == "%E6%97%A5%E6%9C%AC")
        #expect(PercentEncoding.encode("🙂x", as: part) == "%F0%9F%99%82x")
        #expect(PercentEncoding.encode("\u{FEFF}", as: part) == "%EF%BB%BF")
    }

    @Test("seeded random text encodes as Python's urllib.parse.quote does with the part's safe characters")
    func matchesPython() throws {
        var generator = SplitMix64(seed: 3986)
        let alphabet = Array(":/?#[]@!$&'()*+,;=%-._~ azAZ09\u{7f}\t\"<>\\^`{|}é日🙂\u{0}")
        let texts = (0..<300).map { _ in String((0..<generator.int(0...12)).map { _ in alphabet[generator.int(0...(alphabet.count - 1))] }) }
        let script = """
            import json, sys, urllib.parse
            for line in sys.stdin:
                text = json.loads(line)
                print(json.dumps([urllib.parse.quote(text, safe="!$&'()*+,;=:@"), urllib.parse.quote(text, safe="!$'()*,;:@/?"),
                                  urllib.parse.quote(text, safe="")]))
            """
        let input = texts.map { String(decoding: try! JSONEncoder().encode($0), as: UTF8.self) + "\n" }.joined()
        let run = try Tool.run("/usr/bin/env", ["python3", "-c", script], input: Data(input.utf8))
        try #require(run.status == 0, "python3: \(run.stderr)")
        let answers = run.text.split(separator: "\n").map { try! JSONDecoder().decode([String].self, from: Data($0.utf8)) }
        try #require(answers.count == texts.count)
        for (text, expected) in zip(texts, answers) {
            #expect(PercentEncoding.encode(text, as: .pathSegment) == expected[0], "\(text.debugDescription)")
            #expect(PercentEncoding.encode(text, as: .queryComponent) == expected[1], "\(text.debugDescription)")
            #expect(PercentEncoding.encode(text, as: .unreservedOnly) == expected[2], "\(text.debugDescription)")
        }
    }
}
