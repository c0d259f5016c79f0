import Crypto
import Foundation
import NIOPosix
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
        /// Why the version is not the `ver` annotation as sent (see `SymbolServer.minidumpVersion`).
        var versionNote: String?
        var product: String?
        var annotations: [String: String] = [:]
        var attachments: [Attachment] = []
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
