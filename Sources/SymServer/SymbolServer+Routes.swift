import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import SymBundle
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

extension SymbolServer {
    /// Build-ids in, the ones the app lacks out; present ones are linked to the version.
    func missing(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 16 << 20)
        } catch {
            throw ServerError(.tooLarge, "the build-id list is over 16 MiB")
        }
        let query: MissingSymbolsRequest
        do {
            query = try JSONDecoder().decode(MissingSymbolsRequest.self, from: Data(buffer: body))
        } catch {
            throw ServerError(.badRequest, "malformed request: \(Self.describe(error))")
        }
        guard BundleManifest.isVersion(query.version) else { throw ServerError(.badRequest, "version must be 1 to 128 characters of [A-Za-z0-9._+-]") }
        // The same rule as a bundle's manifest: the package is stored with the version either way.
        guard BundleManifest.isPackage(query.package) else { throw ServerError(.badRequest, "package must be at most 255 bytes without control characters") }
        let platform = query.platform
        guard ["linux", "android"].contains(platform) else { throw ServerError(.badRequest, "platform must be linux or android") }
        var modules: [MissingSymbolsRequest.Module] = []
        var seen = Set<String>()
        for var module in query.modules {
            module.buildID = module.buildID.lowercased()
            guard BundleManifest.isBuildID(module.buildID) else { throw ServerError(.badRequest, "invalid build-id \"\(module.buildID.prefix(140))\"") }
            if seen.insert(module.buildID).inserted { modules.append(module) }
        }
        return Self.json(try await metadata.missing(appID: appID, version: query.version, package: query.package,
                                                 platform: platform, modules: modules))
    }

    /// Receives a bundle: streamed to disk, validated, files made durable, metadata committed,
    /// and only then answered 201.
    func upload(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        guard uploads.acquire() else {
            metrics.rejected("too-many-requests")
            throw ServerError(.tooManyRequests, "\(uploads.limit) uploads are in progress; retry later", retryAfter: 2)
        }
        defer { uploads.release() }
        if let length = request.headers[.contentLength].flatMap({ UInt64($0) }), length > configuration.maxBodyBytes {
            metrics.rejected("too-large")
            throw ServerError(.tooLarge, "the body is \(length) bytes, over the limit of \(configuration.maxBodyBytes)")
        }
        let work = objects.scratchDirectory + "/upload-" + UUID().uuidString
        try DirectoryObjectStore.makeDirectory(work)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let bodyPath = work + "/body.zip"
        let received = try await receive(request.body, to: bodyPath)
        metrics.received(bytes: Int(received))
        context.logger.info("bundle received", metadata: ["crashsym.app_id": "\(appID)", "crashsym.bytes": "\(received)"])

        let staging = work + "/files"
        try DirectoryObjectStore.makeDirectory(staging)
        let validator = BundleValidator(limits: configuration.bundleLimits)
        let outcome: Result<ValidatedBundle, BundleValidationError> = try await NIOThreadPool.singleton.runIfActive {
            Result { () throws(BundleValidationError) in try validator.validate(zipAt: bodyPath, stagingDirectory: staging) }
        }
        let bundle: ValidatedBundle
        switch outcome {
        case .success(let validated): bundle = validated
        case .failure(let error) where error.code == .io: throw ServerError(.internal, "cannot stage the bundle: \(error.message)")
        case .failure(let error):
            metrics.rejected("invalid-bundle")
            context.logger.notice("bundle rejected", metadata: ["crashsym.reason": "\(error)"])
            throw ServerError(.invalidBundle, error.description)
        }
        guard bundle.manifest.appID == appID else {
            metrics.rejected("invalid-bundle")
            throw ServerError(.invalidBundle, "manifest.json: app_id \(bundle.manifest.appID) is not the app of the URL (\(appID))")
        }

        let states = try await metadata.states(appID: appID, buildIDs: bundle.modules.map(\.manifest.buildID))
        let objects = self.objects
        // Decided on the thread pool (reading stored tables maps them), put afterwards: files
        // first, then the rows naming them.
        let planned = try await NIOThreadPool.singleton.runIfActive {
            bundle.modules.map { module -> (module: SymbolStore.StoredModule, puts: [(path: String, sha256: String)]) in
                let entry = module.manifest
                var change = SymbolStore.Change.insert
                var keepsTable = false, addsDebug = module.debugPath != nil
                if let state = states[entry.buildID] {
                    // A stored table that cannot be read is improved by any valid one.
                    let stored = (try? TableContent(tableAt: objects.localFile(sha256: state.symbolsSHA256)))
                        ?? TableContent(functions: 0, lineRows: 0, symbols: 0)
                    let betterTable = TableContent(module.statistics).improves(on: stored)
                    keepsTable = !betterTable
                    addsDebug = addsDebug && !state.hasDebugFile
                    change = betterTable || addsDebug
                        ? .improve(table: betterTable, debug: addsDebug, expectedSymbols: state.symbolsSHA256) : .keep
                }
                var puts: [(path: String, sha256: String)] = []
                if !keepsTable && change != .keep { puts.append((module.symbolsPath, entry.symbols.sha256)) }
                if addsDebug, let debugPath = module.debugPath, let debug = entry.debug {
                    puts.append((debugPath, debug.sha256))
                }
                return (SymbolStore.StoredModule(
                    buildID: entry.buildID, name: entry.name, arch: entry.arch, hasDWARF: entry.hasDWARF,
                    symbolsSHA256: entry.symbols.sha256, symbolsSize: entry.symbols.size,
                    debugSHA256: entry.debug?.sha256, debugSize: entry.debug?.size, change: change), puts)
            }
        }
        // Confirmed after the commit: a removal between a put and the commit (the sweeper's
        // DELETE on S3, which no put can stop) is undone by putting the file again.
        let modules = planned.map(\.module)
        let result = try await objects.put(files: planned.flatMap(\.puts)) {
            try await metadata.commit(appID: appID, manifest: bundle.manifest, modules: modules)
        }
        metrics.uploaded(stored: result.stored.count, alreadyPresent: result.alreadyPresent.count)
        // Late symbols: by build-id (new and improved tables) and, for modules reported without
        // one, by name (every table the bundle links to its version, present before or not).
        await crashes.symbolsAdded(appID: appID, buildIDs: result.stored, version: bundle.manifest.version,
                                   names: modules.map(\.name))


        context.logger.info("bundle stored", metadata: [
            "crashsym.app_id": "\(appID)", "crashsym.version": "\(bundle.manifest.version)",
            "crashsym.stored": "\(result.stored.count)", "crashsym.improved": "\(result.improved.count)",
            "crashsym.already_present": "\(result.alreadyPresent.count)",
        ])
        return Self.json(UploadResponse(version: bundle.manifest.version, stored: result.stored, improved: result.improved,
                                        alreadyPresent: result.alreadyPresent),
                         status: .created)
    }

    /// Writes the request body to a new file, counting bytes against the body limit and time
    /// against the request timeout; never holds more than one chunk in memory.
    private func receive(_ body: RequestBody, to path: String) async throws -> UInt64 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DirectoryObjectStore.posixError("open \(path)") }
        defer { close(fd) }
        let deadline = ContinuousClock.now + .nanoseconds(Int64(configuration.requestTimeout * 1e9))
        var total: UInt64 = 0
        var iterator = body.makeAsyncIterator()
        while true {
            let next: ByteBuffer?
            do {
                next = try await iterator.next()
            } catch {
                // The connection failed or was closed for silence (the idle timeout is the request
                // timeout): nobody is left to answer, but the log and the metrics say why.
                metrics.rejected("incomplete-body")
                throw ServerError(.badRequest, "the body ended early after \(total) bytes: \(error)")
            }
            guard let buffer = next else { break }
            total += UInt64(buffer.readableBytes)
            guard total <= configuration.maxBodyBytes else {
                metrics.rejected("too-large")
                throw ServerError(.tooLarge, "the body is over the limit of \(configuration.maxBodyBytes) bytes")
            }
            guard ContinuousClock.now < deadline else {
                metrics.rejected("timeout")
                throw ServerError(.timeout, "the body took longer than \(configuration.requestTimeout) s")
            }
            let failure = buffer.withUnsafeReadableBytes { FileIO.writeAll(fd, $0) }
            guard failure == 0 else { throw DirectoryObjectStore.posixError("write \(path)", failure) }
        }
        return total
    }

    /// The app's versions.
    func versions(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Answer: Encodable { var versions: [SymbolStore.VersionSummary] }
        return Self.json(Answer(versions: try await metadata.versions(appID: appID)))
    }

    /// The modules of one version.
    func modules(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let version = try context.parameters.require("version")
        guard let modules = try await metadata.modules(appID: appID, version: version) else {
            throw ServerError(.notFound, "no version \(version)")
        }
        struct Answer: Encodable { var modules: [SymbolStore.ModuleSummary] }
        return Self.json(Answer(modules: modules))
    }

    /// debuginfod: the uploaded debug file of a build-id (used for both `debuginfo` and
    /// `executable`: the uploaded file is the unstripped ELF).
    func debugFile(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.require("buildId").lowercased()
        guard BundleManifest.isBuildID(id) else { throw ServerError(.badRequest, "invalid build-id") }
        guard let sha256 = try await metadata.debugFileObject(buildID: id) else {
            throw ServerError(.notFound, "no debug file for build-id \(id)")
        }
        let file = try await objects.file(sha256: sha256)
        let body = try await objectBody(file, context)
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.contentLength] = String(file.size)
        headers[HTTPField.Name("X-Debuginfod-Size")!] = String(file.size)
        return Response(status: .ok, headers: headers, body: body)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing field \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted: "not valid JSON"
        default: "\(error)"
        }
    }
}
