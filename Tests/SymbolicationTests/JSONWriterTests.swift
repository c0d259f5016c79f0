import Foundation
import Testing
@testable import Symbolication

/// The JSON writer of `dump`, `upload` and `apps`: members in the order written, strings escaped
/// as RFC 8259 §7 requires, read back by Foundation's parser as written.
@Suite struct JSONWriterTests {
    @Test func membersKeepTheirOrderAndStringsAreEscaped() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("z", "plain")
        writer.field("quote\"key", "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}j é ✓")
        writer.field("count", 42)
        writer.field("negative", -7)
        writer.field("big", UInt64.max)
        writer.field("yes", true)
        writer.field("no", false)
        writer.fieldNull("nothing")
        writer.beginArray("list")
        writer.beginObject()
        writer.field("a", 1)
        writer.endObject()
        writer.beginObject()
        writer.endObject()
        writer.endArray()
        writer.beginObject("empty")
        writer.endObject()
        writer.endObject()

        // RFC 8259 §7: quotation mark, reverse solidus and control characters escaped; the
        // two-character forms where they exist, \u00XX for the others.
        let escaped = #""a\"b\\c\nd\re\tf\bg\fh\u0001i\u001fj é ✓""#
        #expect(writer.text == #"{"z":"plain","quote\"key":"# + escaped
                + #","count":42,"negative":-7,"big":18446744073709551615,"yes":true,"no":false,"nothing":null,"#
                + #""list":[{"a":1},{}],"empty":{}}"#)
        #expect(writer.bytes == Array(writer.text.utf8))

        let object = try #require(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any])
        #expect(object["quote\"key"] as? String == "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{1}i\u{1f}j é ✓")
        #expect(object["negative"] as? Int == -7)
        #expect(object["nothing"] is NSNull)
        #expect((object["list"] as? [[String: Any]])?.count == 2)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let text = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self)
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("all", text)
        writer.endObject()
        #expect(!writer.bytes.contains { $0 < 0x20 })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: String])
        #expect(object["all"] == text)
    }
}
