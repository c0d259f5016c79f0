import Foundation
import Testing
@testable import SymServer

/// The streaming multipart reader and the gzip inflater of `POST …/minidump`, in process: any
/// chunking gives the same parts, every truncation is an error and never a trap, hostile input
/// stays bounded.
@Suite("MultipartReader")
struct MultipartReaderTests {
    struct Part: Equatable {
        var headers: MultipartReader.PartHeaders
        var bytes: [UInt8]
    }

    /// Reads `body` fed in pieces of `chunk` bytes; the parts, or the error.
    static func read(_ body: [UInt8], boundary: String, chunk: Int) throws -> [Part] {
        guard var reader = MultipartReader(boundary: boundary) else { throw TestFailure("boundary refused") }
        var parts: [Part] = []
        var index = 0
        while index < body.count {
            let end = min(body.count, index + chunk)
            try reader.feed(body[index..<end]) { event in
                switch event {
                case .headers(let headers): parts.append(Part(headers: headers, bytes: []))
                case .bytes(let bytes): parts[parts.count - 1].bytes += bytes
                case .partEnd: break
                }
            }
            index = end
        }
        try reader.finish()
        return parts
    }

    static let boundary = "---MultipartBoundary-abcdefghijklmnopqrstuvwxyz012345---"

    /// A body as Crashpad writes one, its file holding near-delimiters (CR LF - - and a prefix of
    /// the boundary) that must not end it.
    static var crashpadFile: [UInt8] {
        var file: [UInt8] = Array("MDMP".utf8)
        file += Array(("\r\n--\r\n---MultipartBoundary-abc\r\n--" + boundary.dropLast()).utf8)
        file += (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        return file
    }

    static var crashpadBody: [UInt8] {
        let file = crashpadFile
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"prod\"\r\n\r\ncrash_linux\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"a%22b%0d%0a%25\"\r\n\r\nq\r\n".utf8)
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; filename=\"x.dmp\"\r\n".utf8)
        body += Array("Content-Type: application/octet-stream\r\n\r\n".utf8)
        body += file
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    @Test("Crashpad's body read in chunks of every size from 1 to 97 bytes gives the same parts")
    func chunking() throws {
        let body = Self.crashpadBody
        let whole = try Self.read(body, boundary: Self.boundary, chunk: body.count)
        #expect(whole.count == 3)
        #expect(whole[0] == Part(headers: .init(name: "prod", filename: nil, contentType: nil), bytes: Array("crash_linux".utf8)))
        #expect(whole[1].headers.name == "a\"b\r\n%", "Crashpad's escapes undone")
        #expect(whole[2].headers == .init(name: "upload_file_minidump", filename: "x.dmp", contentType: "application/octet-stream"))
        #expect(whole[2].bytes == Self.crashpadFile)
        for chunk in 1...97 {
            #expect(try Self.read(body, boundary: Self.boundary, chunk: chunk) == whole, "chunk \(chunk)")
        }
    }

    @Test("a preamble, transport padding, an epilogue, a quoted boundary and curl's form are read")
    func variants() throws {
        let body = Array("preamble\r\n--b  \r\nContent-Disposition: form-data; name=\"k\"\r\n\r\nv\r\n--b--  \r\nepilogue".utf8)
        let parts = try Self.read(body, boundary: "b", chunk: 3)
        #expect(parts == [Part(headers: .init(name: "k", filename: nil, contentType: nil), bytes: Array("v".utf8))])
        #expect(MultipartReader.boundary(contentType: "multipart/form-data; boundary=\"a b\"") == "a b")
        #expect(MultipartReader.boundary(contentType: "Multipart/Form-Data;charset=utf-8; BOUNDARY=xyz") == "xyz")
        #expect(MultipartReader.boundary(contentType: "multipart/mixed; boundary=xyz") == nil)
        #expect(MultipartReader(boundary: "") == nil)
        #expect(MultipartReader(boundary: String(repeating: "a", count: 71)) == nil)
        #expect(MultipartReader(boundary: "bad\"quote") == nil)
        // A filename with a backslash-escaped quote (RFC 2616 quoted-pair).
        let quoted = Array("--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\\\"b.dmp\"\r\n\r\nx\r\n--b--\r\n".utf8)
        #expect(try Self.read(quoted, boundary: "b", chunk: 5).first?.headers.filename == "a\"b.dmp")
    }

    @Test("every truncation of a valid body is an error at finish, never a trap")
    func truncations() throws {
        let body = Self.crashpadBody
        // The body is complete once its close delimiter's "--" is read: cut anywhere before.
        for length in 0..<(body.count - 2) {
            #expect(throws: MultipartError.self, "length \(length)") {
                _ = try Self.read(Array(body[..<length]), boundary: Self.boundary, chunk: 7)
            }
        }
    }

    @Test("seeded random corruptions of a valid body either read or throw, never trap")
    func corruptions() {
        var generator = SeededGenerator(seed: 0x6d696e69)
        let body = Self.crashpadBody
        for _ in 0..<2000 {
            var copy = body
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                copy[Int.random(in: 0..<copy.count, using: &generator)] = [0x0d, 0x0a, 0x2d, 0x22, 0x3a, 0x3b, 0x00]
                    .randomElement(using: &generator)!
            }
            _ = try? Self.read(copy, boundary: Self.boundary, chunk: Int.random(in: 1...64, using: &generator))
        }
    }

    @Test("a part of near-delimiters and a header block fed a byte at a time stay linear and bounded")
    func hostileShapes() throws {
        // 4 MiB of "\r\n--" plus the boundary less its last byte: every position is a candidate.
        let near = Array(("\r\n--" + Self.boundary.dropLast()).utf8)
        var body = Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\n\r\n".utf8)
        for _ in 0..<(4 << 20) / near.count { body += near }
        body += Array("\r\n--\(Self.boundary)--\r\n".utf8)
        let parts = try Self.read(body, boundary: Self.boundary, chunk: 65536)
        #expect(parts.count == 1)
        #expect(parts[0].bytes.count == ((4 << 20) / near.count) * near.count)
        // A header block that never ends is refused at 16 KiB, fed a byte at a time.
        var endless = Array("--b\r\nX: ".utf8)
        endless += [UInt8](repeating: 0x61, count: 40_000)
        #expect(throws: MultipartError.self) { _ = try Self.read(endless, boundary: "b", chunk: 1) }
    }

    @Test("gzip: inflated across feeds, several members, the limit enforced while inflating")
    func inflater() throws {
        let text = Array(String(repeating: "crashsym minidump ", count: 10_000).utf8)
        let member = Array(try MinidumpClients.gzipped(Data(text)))
        var output: [UInt8] = []
        let inflater = try GzipInflater(limit: 1 << 20)
        let twice = member + member
        for start in stride(from: 0, to: twice.count, by: 333) {
            let piece = Array(twice[start..<min(twice.count, start + 333)])
            try piece.withUnsafeBytes { bytes in try inflater.inflate(bytes) { output += $0 } }
        }
        #expect(output == text + text)
        #expect(inflater.atMemberEnd)

        let small = try GzipInflater(limit: 1000)
        var produced = 0
        #expect(throws: GzipInflater.Failure.tooLarge(limit: 1000)) {
            try member.withUnsafeBytes { bytes in try small.inflate(bytes) { produced += $0.count } }
        }
        #expect(produced <= 1000)
        let corrupt = try GzipInflater(limit: 1 << 20)
        #expect(throws: GzipInflater.Failure.self) {
            try Array("definitely not gzip".utf8).withUnsafeBytes { bytes in try corrupt.inflate(bytes) { _ in } }
        }
    }
}

/// A deterministic generator (SplitMix64), so a failing corruption reproduces.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
