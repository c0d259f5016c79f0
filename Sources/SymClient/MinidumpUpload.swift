import CLibz
import Foundation
import SymHTTP

/// A minidump upload as Crashpad's `crashpad_handler` sends one: a `multipart/form-data` body
/// (one text part per annotation, the minidump as the file part `upload_file_minidump`, written
/// like Crashpad's `HTTPMultipartBuilder`) compressed as a whole with gzip
/// (`Content-Encoding: gzip`).
public struct MinidumpUpload: Sendable {
    /// The minidump's bytes.
    public var minidump: [UInt8]
    /// The file name sent with the minidump part.
    public var filename: String
    /// Annotations, sent as text parts in this order (`prod`, `ver`, and whatever the app adds).
    public var annotations: [(key: String, value: String)]
    /// Whether the body is gzip-compressed (Crashpad's default).
    public var gzip: Bool

    /// An upload of `minidump`.
    public init(minidump: [UInt8], filename: String = "upload.dmp", annotations: [(key: String, value: String)] = [],
                gzip: Bool = true) {
        self.minidump = minidump
        self.filename = filename
        self.annotations = annotations
        self.gzip = gzip
    }

    /// The body and its `Content-Type` (with a random boundary, as Crashpad draws one).
    public func body() throws(ClientError) -> (bytes: [UInt8], contentType: String) {
        let boundary = Self.randomBoundary()
        var body: [UInt8] = []
        body.reserveCapacity(minidump.count + 512 + annotations.count * 128)
        func append(_ text: String) { body.append(contentsOf: text.utf8) }
        for (key, value) in annotations {
            append("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.escape(key))\"\r\n\r\n\(value)\r\n")
        }
        append("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; filename=\"\(Self.escape(filename))\"\r\n")
        append("Content-Type: application/octet-stream\r\n\r\n")
        body.append(contentsOf: minidump)
        append("\r\n--\(boundary)--\r\n")
        return (gzip ? try Self.gzip(body) : body, "multipart/form-data; boundary=\(boundary)")
    }

    /// Crashpad's boundary shape: `---MultipartBoundary-`, 32 random letters and digits, `---`.
    static func randomBoundary() -> String {
        let characters = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return "---MultipartBoundary-" + String((0..<32).map { _ in characters.randomElement(using: &generator)! }) + "---"
    }

    /// A name as Crashpad writes it in a form-data header: `"`, CR, LF and `%` percent-escaped.
    static func escape(_ name: String) -> String {
        var escaped = ""
        for character in name.unicodeScalars {
            switch character {
            case "\"": escaped += "%22"
            case "\r": escaped += "%0d"
            case "\n": escaped += "%0a"
            case "%": escaped += "%25"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// `bytes` as one gzip member (RFC 1952), as Crashpad's `GzipHTTPBodyStream` writes it.
    static func gzip(_ bytes: [UInt8]) throws(ClientError) -> [UInt8] {
        var stream = z_stream()
        // 16 + 15: a gzip header and trailer, 32 KiB window; memory level 8 (zlib's default).
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ClientError(.configuration, "zlib cannot start")
        }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 64)
        let status = bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out -> Int32 in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw ClientError(.configuration, "zlib cannot compress the body (status \(status))") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}

extension SymbolClient {
    /// Uploads a minidump to `POST …/minidump` as Crashpad does; returns the crash id the
    /// server answers (its plain-text body). Retried like every request of the client.
    public func uploadMinidump(_ upload: MinidumpUpload) throws(ClientError) -> String {
        let body = try upload.body()
        var headers = ["Authorization: Bearer \(configuration.appKey)", "Accept: text/plain"]
        if upload.gzip { headers.append("Content-Encoding: gzip") }
        let response = try send(HTTPRequest(url: url("minidump"), body: .bytes(body.bytes), contentType: body.contentType,
                                            headers: headers),
                                progress: nil)
        let id = String(decoding: response.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard id.utf8.count == 32, id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw ClientError(.invalidResponse, "the server answered no crash id: \(id.prefix(80))", status: response.status)
        }
        return id
    }
}
