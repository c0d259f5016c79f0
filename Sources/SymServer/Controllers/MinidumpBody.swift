import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Reads the body of `POST …/minidump` into a submission, as it streams in: inflated when
/// `Content-Encoding: gzip` (the limit counts inflated bytes, so a gzip bomb stops at the limit),
/// then split into parts by `MultipartReader`, or taken whole for `application/octet-stream`.
enum MinidumpBody {
    /// The form field of the minidump (Crashpad and Breakpad).
    static let minidumpField = "upload_file_minidump"
    /// Most annotations (text parts), and most bytes of one.
    static let maximumAnnotations = 512
    static let maximumAnnotationBytes = 64 << 10
    /// Most attachments (file parts besides the minidump).
    static let maximumAttachments = 32

    /// The submission of `request`, its bytes (inflated) charged to `charge` as they arrive: the
    /// caller releases them once it is done with the submission.
    static func read(_ request: Request, limit: Int, charge: UploadLimiter.Charge) async throws -> CrashService.MinidumpSubmission {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw ServerError(.tooLarge, "the upload is \(length) bytes, over the limit of \(limit) (--max-minidump-bytes)")
        }
        let inflater: GzipInflater?
        switch request.headers[.contentEncoding]?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "", "identity": inflater = nil
        case "gzip", "x-gzip":
            do { inflater = try GzipInflater(limit: limit) } catch { throw ServerError(.internal, "zlib cannot start") }
        case let other?:
            throw ServerError(.unsupportedMediaType, "Content-Encoding \(other.prefix(40)) is not supported (gzip or none)")
        }
        let contentType = request.headers[.contentType] ?? "application/octet-stream"
        var collector: Collector
        if let boundary = MultipartReader.boundary(contentType: contentType) {
            guard let reader = MultipartReader(boundary: boundary) else {
                throw ServerError(.badRequest, "the multipart boundary must be 1 to 70 characters of RFC 2046's set")
            }
            collector = Collector(reader: reader)
        } else {
            let type = contentType.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
            guard type != "multipart/form-data" else { throw ServerError(.badRequest, "the multipart/form-data Content-Type names no boundary") }
            guard ["application/octet-stream", "application/x-minidump", "application/x-dmp"].contains(type) else {
                throw ServerError(.unsupportedMediaType,
                                  "send the minidump as multipart/form-data (part upload_file_minidump) or application/octet-stream, not \(type.prefix(60))")
            }
            collector = Collector(reader: nil)
        }
        var received = 0
        do {
            for try await buffer in request.body {
                try buffer.withUnsafeReadableBytes { bytes in
                    if let inflater {
                        try inflater.inflate(bytes) { piece in
                            try charge.take(piece.count)
                            try collector.take(piece)
                        }
                    } else {
                        received += bytes.count
                        guard received <= limit else { throw GzipInflater.Failure.tooLarge(limit: limit) }
                        try charge.take(bytes.count)
                        try collector.take(bytes)
                    }
                }
            }
        } catch GzipInflater.Failure.tooLarge(let limit) {
            throw ServerError(.tooLarge, "the upload is over the limit of \(limit) bytes (--max-minidump-bytes), counted after decompression")
        } catch GzipInflater.Failure.corrupt(let reason) {
            throw ServerError(.badRequest, "the gzip body is corrupt: \(reason)")
        } catch let error as MultipartError {
            throw ServerError(.badRequest, "malformed multipart body: \(error)")
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw ServerError(.tooLarge, "the upload is over the server's body limit")
        }
        if let inflater, !inflater.atMemberEnd {
            throw ServerError(.badRequest, "the gzip body is truncated (it ends inside a compressed stream)")
        }
        do {
            return try collector.finish()
        } catch let error as MultipartError {
            throw ServerError(.badRequest, "malformed multipart body: \(error)")
        }
    }

    /// Gathers the parts the reader finds.
    struct Collector {
        var reader: MultipartReader?
        var submission = CrashService.MinidumpSubmission()
        private var part: MultipartReader.PartHeaders?
        private var bytes: [UInt8] = []
        private var haveMinidump = false

        init(reader: MultipartReader?) {
            self.reader = reader
        }

        mutating func take(_ piece: some Collection<UInt8>) throws {
            guard var reader else {
                submission.minidump.append(contentsOf: piece)
                return
            }
            self.reader = nil  // one owner of its buffer while it reads (no copy)
            defer { self.reader = reader }
            try reader.feed(piece) { event in try handle(event) }
        }

        private mutating func handle(_ event: MultipartReader.Event) throws {
            switch event {
            case .headers(let headers):
                part = headers
                bytes = []
            case .bytes(let piece):
                if let part, part.filename == nil, part.name != MinidumpBody.minidumpField,
                   bytes.count + piece.count > MinidumpBody.maximumAnnotationBytes {
                    throw ServerError(.badRequest, "the annotation \"\(part.name.prefix(40))\" is over \(MinidumpBody.maximumAnnotationBytes) bytes")
                }
                bytes.append(contentsOf: piece)
            case .partEnd:
                guard let part else { return }
                self.part = nil
                if part.name == MinidumpBody.minidumpField && !haveMinidump {
                    haveMinidump = true
                    submission.minidump = bytes
                } else if part.filename == nil && part.name != MinidumpBody.minidumpField {
                    guard submission.annotations.count < MinidumpBody.maximumAnnotations else {
                        throw ServerError(.badRequest, "more than \(MinidumpBody.maximumAnnotations) annotations")
                    }
                    if submission.annotations[part.name] == nil {
                        submission.annotations[part.name] = String(decoding: bytes, as: UTF8.self)
                    }
                } else {
                    guard submission.attachments.count < MinidumpBody.maximumAttachments else {
                        throw ServerError(.badRequest, "more than \(MinidumpBody.maximumAttachments) attached files")
                    }
                    submission.attachments.append(CrashService.Attachment(name: part.name, filename: part.filename ?? part.name,
                                                                          contentType: part.contentType, bytes: bytes))
                }
                bytes = []
            }
        }

        func finish() throws -> CrashService.MinidumpSubmission {
            if let reader {
                try reader.finish()
                guard haveMinidump else {
                    throw ServerError(.badRequest, "the form has no upload_file_minidump part")
                }
            }
            guard !submission.minidump.isEmpty else { throw ServerError(.badRequest, "the minidump is empty") }
            return submission
        }
    }
}
