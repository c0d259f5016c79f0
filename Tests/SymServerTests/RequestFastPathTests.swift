import Foundation
import Testing
@testable import SymServer

/// The hot path of `POST …/symbolicate` checks every body for text and every request's
/// `Authorization` header: each check has a fast path, held here to an oracle outside it over
/// seeded random inputs, with the edges (where a word of eight bytes begins and ends) spelled out.
@Suite("Request fast paths")
struct RequestFastPathTests {
    /// Valid UTF-8 without NUL, decided by the standard library's validating initializer (not
    /// the decoder `CrashService.isText` falls back to).
    static func oracleIsText(_ bytes: [UInt8]) -> Bool {
        !bytes.contains(0) && String(validating: bytes, as: UTF8.self) != nil
    }

    /// The pieces random bodies are made of: ASCII, NUL, whole multi-byte scalars, and bytes or
    /// sequences that are not UTF-8 (lone continuation, overlong, surrogate, truncated, 0xFF).
    static let pieces: [[UInt8]] = [
        Array("a".utf8), Array("Z".utf8), Array(" ".utf8), Array("\n".utf8), Array("#1 0x7f00".utf8), [0x7F],
        [0], Array("é".utf8), Array("€".utf8), Array("😀".utf8),
        [0x80], [0xBF], [0xC0, 0x80], [0xC3], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF],
    ]

    @Test("isText agrees with the standard library on 20,000 seeded random bodies of 0 to 40 bytes")
    func isTextMatchesOracle() {
        var generator = SeededGenerator(seed: 0x7465_7874)
        var disagreements: [[UInt8]] = []
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            let length = Int.random(in: 0...40, using: &generator)
            while bytes.count < length {
                // Mostly ASCII, as reports are, so that the odd piece lands anywhere in a word.
                let piece = Int.random(in: 0..<10, using: &generator) < 8
                    ? Self.pieces[Int.random(in: 0..<6, using: &generator)]
                    : Self.pieces.randomElement(using: &generator)!
                bytes += piece
            }
            if CrashService.isText(bytes) != Self.oracleIsText(bytes) { disagreements.append(bytes) }
        }
        let first = disagreements.prefix(3)
        #expect(disagreements.count == 0, "first: \(first)")
    }

    @Test("one NUL, non-ASCII scalar or invalid byte at every offset of a 40-byte ASCII body", arguments: [
        ([0] as [UInt8], false), (Array("é".utf8), true), (Array("😀".utf8), true), ([0x80], false), ([0xFF], false),
        ([0xE2, 0x82], false), ([0x01], true), ([0x7F], true),
    ] as [([UInt8], Bool)])
    func oneOddPieceAtEveryOffset(piece: [UInt8], text: Bool) {
        let ascii = Array("0123456789abcdefghijklmnopqrstuvwxyzABCD".utf8)
        for offset in 0...ascii.count {
            var bytes = ascii
            bytes.insert(contentsOf: piece, at: offset)
            #expect(CrashService.isText(bytes) == text, "\(piece) at \(offset)")
            // Truncated there too: the piece is the last bytes.
            #expect(CrashService.isText(Array(bytes[..<(offset + piece.count)])) == text, "\(piece) ending at \(offset)")
        }
        #expect(CrashService.isText([]))
    }

    /// The bearer token as the server read it with Foundation before (`trimmingCharacters(in:
    /// .whitespaces)`): the oracle of `SymbolServer.bearerToken`.
    static func oracleBearerToken(_ value: String) -> String? {
        let trimmed = value.drop { $0 == " " || $0 == "\t" }
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }),
              trimmed[..<space].lowercased() == "bearer" else { return nil }
        return trimmed[space...].trimmingCharacters(in: .whitespaces)
    }

    @Test("the bearer token of an Authorization value", arguments: [
        ("Bearer csk_1", "csk_1"), ("bearer csk_1", "csk_1"), ("BEARER\tcsk_1", "csk_1"), ("  BeArEr   csk_1 \t ", "csk_1"),
        ("Bearer \u{00A0}csk_1\u{3000}", "csk_1"), ("Bearer csk 1", "csk 1"), ("Bearer ", ""),
        ("Bearercsk_1", nil), ("Basic csk_1", nil), ("Bearers csk_1", nil), ("", nil), ("Bearer", nil),
        ("B\u{0301}earer csk_1", nil), ("\u{00A0}Bearer csk_1", nil), ("Bearer \u{200B}csk_1\u{200B}", "csk_1"),
    ] as [(String, String?)])
    func bearerToken(value: String, token: String?) {
        #expect(SymbolServer.bearerToken(value) == token)
        #expect(Self.oracleBearerToken(value) == token)
    }

    @Test("bearerToken agrees with the Foundation oracle on 20,000 seeded random header values")
    func bearerTokenMatchesOracle() {
        // Scheme letters in both cases, ASCII and Unicode spaces (Zs), a combining mark, letters
        // that lowercase to ASCII (KELVIN SIGN), and token characters.
        let alphabet: [String] = ["b", "B", "e", "E", "a", "A", "r", "R", " ", "\t", "\u{00A0}", "\u{2003}", "\u{3000}",
                                  "\u{0301}", "\u{212A}", "k", "_", "1", "é", "\n", "\u{200B}"]
        var generator = SeededGenerator(seed: 0x6265_6172)
        var disagreements: [String] = []
        for _ in 0..<20_000 {
            var value = Int.random(in: 0..<3, using: &generator) == 0 ? "" : ["Bearer ", "bearer\t", " BEARER  "].randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 0...12, using: &generator) { value += alphabet.randomElement(using: &generator)! }
            if SymbolServer.bearerToken(value) != Self.oracleBearerToken(value) { disagreements.append(value) }
        }
        let first = disagreements.prefix(3).map { Array($0.unicodeScalars) }
        #expect(disagreements.count == 0, "first: \(first)")
    }
}
