import Crypto
import Foundation
import NIOPosix
import SymBundle
import SymBytes
import SymCore
import SymReport
import Symbolication

/// Minidumps from Crashpad and Breakpad clients (`POST …/minidump`): stored like any crash (bytes
/// durable, then the row and its job), processed by walking every thread with the CFI of the
/// app's tables, then symbolicated and grouped like any report.
extension CrashService {
    /// A file part kept with the crash.
    struct Attachment: Sendable {
        var name: String
        var filename: String
        var contentType: String?
        var bytes: [UInt8]
    }

    /// What a client uploaded besides the request's own parameters.
    struct MinidumpSubmission: Sendable {
        var minidump: [UInt8] = []
        var version: String?
        /// Why the version is not the `ver` annotation as sent (see `takeVersion(query:)`).
        var versionNote: String?
        var product: String?
        var annotations: [String: String] = [:]
        var attachments: [Attachment] = []

        /// Decides the crash's version, and why the `ver` annotation was not taken as it came.
        /// The `ver` annotation (what the crash client sends, often with no say of the app's: a
        /// crash must not be lost for it) wins; one that is not a version is taken with its
        /// surrounding white space removed when that makes it one (nothing else is guessed: "1.0
        /// (42)" could be 1.0, 1.0.42 or 1.0+42), else `query` (`?version=`) when it is one, else
        /// the crash's version is unknown, as when the client sends none; the note says which.
        /// Crashpad copies `ver` into `?version=` (`identify_client_via_url`), so an invalid
        /// `?version=` beside a `ver` is not an error either. `?version=` alone is the caller's
        /// own parameter and is checked as `POST …/crashes` checks it (`400`).
        mutating func takeVersion(query: String?) throws {
            (version, versionNote) = try Self.version(annotation: annotations["ver"], query: query)
        }

        private static func version(annotation: String?, query: String?) throws -> (version: String?, note: String?) {
            guard let annotation else {
                guard let query else { return (nil, nil) }
                guard BundleManifest.isVersion(query) else { throw ServerError(.badRequest, "version must be 1 to 128 characters of [A-Za-z0-9._+-]") }
                return (query, nil)
            }
            if BundleManifest.isVersion(annotation) { return (annotation, nil) }
            let why = "the ver annotation (\(annotation.utf8.count) bytes, kept with the annotations) is not 1 to 128 characters of [A-Za-z0-9._+-]"
            let trimmed = annotation.trimmingCharacters(in: .whitespacesAndNewlines)
            if BundleManifest.isVersion(trimmed) { return (trimmed, why + "; taken without its surrounding white space") }
            if let query, BundleManifest.isVersion(query) { return (query, why + "; the version is ?version= instead") }
            return (nil, why + (query == nil ? "" : ", nor is ?version=") + "; the version is unknown")
        }
    }

    /// Stores the minidump and its attachments durably, then the crash, what its client sent and
    /// its job; a minidump the app sent before (same SHA-256) answers the first crash.
    func ingestMinidump(appID: String, submission: MinidumpSubmission) async throws -> CrashStore.Receipt {
        // The reader's own check: a minidump it would refuse for its header is not kept.
        let header = submission.minidump.withUnsafeBytes { bytes in
            Result { () throws(FormatError) in try Minidump.checkHeader(bytes) }
        }
        if case .failure(let error) = header {
            throw ServerError(.badRequest, "the upload_file_minidump part is refused: \(error.message)")
        }
        let sha256 = hexString(Array(SHA256.hash(data: submission.minidump)))
        var files: [(bytes: [UInt8], sha256: String)] = [(submission.minidump, sha256)]
        var attachments: [CrashStore.MinidumpAttachment] = []
        for attachment in submission.attachments {
            let digest = hexString(Array(SHA256.hash(data: attachment.bytes)))
            files.append((attachment.bytes, digest))
            attachments.append(CrashStore.MinidumpAttachment(name: attachment.name, filename: attachment.filename,
                                                             contentType: attachment.contentType, size: attachment.bytes.count,
                                                             sha256: digest))
        }
        // Every file is put, present or not: the put refreshes an object that a removal in
        // flight would take. Those absent before are this request's: a duplicate (or a failure)
        // must not leave them behind.
        var added: [String] = [], seen = Set<String>()
        for file in files where seen.insert(file.sha256).inserted {
            if try await !objects.contains(sha256: file.sha256) { added.append(file.sha256) }
            try await objects.put(bytes: file.bytes, sha256: file.sha256)
        }
        let receipt: CrashStore.Receipt
        do {
            receipt = try await store.acceptMinidump(
                CrashStore.NewCrash(appID: appID, version: submission.version, host: nil, environment: nil,
                                    inputFormat: CrashStore.minidumpFormat, rawSHA256: sha256, rawSize: submission.minidump.count,
                                    idempotencyKey: "minidump-sha256:" + sha256, receivedMilliseconds: currentMilliseconds()),
                details: CrashStore.MinidumpDetails(product: submission.product, annotations: submission.annotations,
                                                    attachments: attachments, versionNote: submission.versionNote))
        } catch {
            try? await removeUnused(added)
            throw error
        }
        if receipt.replayed {
            // The first crash keeps its own attachments; what this request wrote is nobody's.
            try await removeUnused(added)
        } else {
            for file in files { try await objects.confirm(bytes: file.bytes, sha256: file.sha256) }
            minidumpsAccepted.increment()
            doorbell.ring()
        }
        return receipt
    }

    /// Removes those of `added` that no row names.
    private func removeUnused(_ added: [String]) async throws {
        try await objects.removeUnused(added, in: store)
    }

    /// Reads a minidump crash on the calling (thread-pool) thread, then goes on as `begin` does;
    /// a minidump that cannot be read is stored as failed with the reason.
    func beginMinidump(_ input: CrashStore.ProcessingInput, rules: GroupingRules) throws -> Step {
        let file: MappedFile
        do {
            file = try MappedFile(path: try objects.localFile(sha256: input.rawSHA256))
        } catch {
            throw StoreError.corrupt("the minidump of crash \(input.id) is unreadable (\(input.rawSHA256)): \(error)")
        }
        let dump: Minidump
        do {
            dump = try Minidump(file: file)
        } catch {
            return .done(CrashStore.ProcessingResult(state: .failed, failure: "cannot read the minidump: \(error)", missing: []))
        }
        let parsed = Parsed(input: input, content: .minidump(dump), reportVersion: nil, version: input.version,
                            wanted: StoreSymbolication.Wanted(dump))
        return try next(parsed, rules: rules)
    }

    /// Walks, symbolicates and signs a read minidump with its tables, on the calling thread.
    func completeMinidump(_ dump: Minidump, parsed: Parsed, rules: GroupingRules, stored: ReportTables) throws -> CrashStore.ProcessingResult {
        let result: SymbolicatedReport
        do {
            // The walks stop once they pass the frame limit (a million threads sharing a stack,
            // stacks that loop): bounded time and memory whatever the dump.
            result = try symbolication.symbolicateNow(minidump: dump, appID: parsed.input.appID, version: parsed.version,
                                                      maximumFrames: configuration.maxFrames, renderings: .json, stored: stored)
        } catch let error as FormatError where error.code == .limitExceeded {
            return CrashStore.ProcessingResult(state: .failed, failure: error.message,
                                               missing: [])
        } catch let error as FormatError {
            return CrashStore.ProcessingResult(state: .failed, failure: "cannot read the minidump: \(error)", missing: [])
        }
        return Self.outcome(result, format: CrashStore.minidumpFormat, reportVersion: nil, rules: rules)
    }
}
