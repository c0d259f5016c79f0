import Crypto
import Foundation
import Logging
import Metrics
import NIOPosix
import SymBytes
import SymReport
import SymTable
import Symbolication

/// The crash service: ingestion (bytes durable, then the row and its job, then the answer),
/// processing (parse, symbolicate, sign, group), symbolication on request, late symbols.
/// Routes call it; it speaks `ServerError` to them and `StoreError` comes from below.
final class CrashService: Sendable {
    let store: CrashStore
    let objects: ObjectStore
    let configuration: CrashServiceConfiguration
    let symbolication: StoreSymbolication
    let doorbell = Doorbell()
    let board = CompletionBoard()
    let limiter: CrashRateLimiter
    let logger: Logger
    /// When a group's growth is a spike (notifications, docs/webhooks.md).
    let spike: CrashStore.SpikeRule
    /// Wakes the webhook delivery service after each processed crash.
    let webhookSignal = WebhookSignal()

    private let acceptedCounter = Counter(label: "crashsym_crashes_accepted_total")
    private let processedCounter = Counter(label: "crashsym_crashes_processed_total")
    private let failedCounter = Counter(label: "crashsym_crashes_failed_total")
    private let requeuedCounter = Counter(label: "crashsym_crashes_requeued_total")
    private let processingTimer = Timer(label: "crashsym_crash_processing_seconds")
    private let symbolicateTimer = Timer(label: "crashsym_symbolicate_seconds")

    init(symbols: SymbolStore, configuration: CrashServiceConfiguration, logger: Logger,
         spike: CrashStore.SpikeRule = CrashStore.SpikeRule()) {
        self.spike = spike
        store = CrashStore(symbols: symbols)
        objects = symbols.objects
        self.configuration = configuration
        symbolication = StoreSymbolication(crashes: store, objects: objects, tableCacheBytes: configuration.tableCacheMB << 20)
        limiter = CrashRateLimiter(perMinute: configuration.maxCrashesPerMinute)
        self.logger = logger
    }

    // MARK: Ingestion

    /// What a client may say about a crash besides its bytes.
    struct Submission: Sendable {
        var version: String?
        var host: String?
        var environment: String?
        var inputFormat: ReportFormat?
        var idempotencyKey: String?
    }

    /// Stores `body` durably and queues its processing; returns the 201 answer.
    func ingest(appID: String, body: [UInt8], submission: Submission) async throws -> CrashStore.Receipt {
        guard Self.isText(body) else {
            throw ServerError(.badRequest, "the body is not text (a NUL byte or invalid UTF-8): not a crash report")
        }
        let sha256 = hexString(Array(SHA256.hash(data: body)))
        let scratch = objects.temporaryDirectory + "/crash-" + CrashStore.randomHex(bytes: 12)
        let objects = self.objects
        try await NIOThreadPool.singleton.runIfActive {
            try Self.writeAll(body, to: scratch)
            try objects.insert(fileAt: scratch, sha256: sha256)
        }
        let receipt = try await store.accept(CrashStore.NewCrash(
            appID: appID, version: submission.version, host: submission.host, environment: submission.environment,
            inputFormat: submission.inputFormat?.rawValue, rawSHA256: sha256, rawSize: body.count,
            idempotencyKey: submission.idempotencyKey, receivedMilliseconds: currentMilliseconds()))
        if !receipt.replayed {
            acceptedCounter.increment()
            doorbell.ring()
        }
        return receipt
    }

    /// Waits up to `seconds` for crash `id` to be processed; returns its state then.
    func waitForProcessing(appID: String, receipt: CrashStore.Receipt, seconds: Double) async throws -> CrashStore.Receipt {
        guard receipt.state == .pending, seconds > 0 else { return receipt }
        let ticket = board.ticket(for: receipt.id)
        var current = try await store.crash(appID: appID, id: receipt.id).summary
        if current.state == .pending {
            await board.wait(for: receipt.id, ticket: ticket, timeout: .milliseconds(Int64(seconds * 1000)))
            current = try await store.crash(appID: appID, id: receipt.id).summary
        } else {
            await board.wait(for: receipt.id, ticket: ticket, timeout: .zero)
        }
        return CrashStore.Receipt(id: receipt.id, state: current.state, groupID: current.groupID, replayed: receipt.replayed)
    }

    /// Whether `bytes` is text: valid UTF-8 without NUL bytes.
    static func isText(_ bytes: [UInt8]) -> Bool {
        guard !bytes.contains(0) else { return false }
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    private static func writeAll(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ObjectStore.posixError("open \(path)") }
        defer { close(fd) }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll(fd, $0) }
        if failure != 0 {
            errno = failure
            throw ObjectStore.posixError("write \(path)")
        }
    }

    // MARK: Processing

    /// Attempts after which a crash whose processing keeps failing is marked failed.
    static let maximumAttempts = 5

    /// Processes leased jobs: the crashes are read, symbolicated and grouped on the thread pool
    /// (one job for the batch, each crash on its own), and the outcomes committed with the end of
    /// their jobs in one transaction. Should that transaction fail, each is committed alone, so
    /// one crash's failure does not hold back the others.
    func process(_ jobs: [CrashStore.Job]) async {
        guard !jobs.isEmpty else { return }
        let start = ContinuousClock.now
        let inputs: [Int64: CrashStore.ProcessingInput]
        var rules: [String: GroupingRules] = [:]
        do {
            inputs = try await store.processingInputs(seqs: jobs.map(\.seq))
            for appID in Set(inputs.values.map(\.appID)) { rules[appID] = try await groupingRules(appID: appID) }
        } catch {
            for job in jobs { await failed(job, error) }
            return
        }
        let work = jobs.compactMap { job in inputs[job.seq].map { (job: job, input: $0) } }
        let analysed: [Result<CrashStore.ProcessingResult, any Error>]
        do {
            let rules = rules
            analysed = try await NIOThreadPool.singleton.runIfActive { [self] in
                work.map { item in Result { try analyse(item.input, rules: rules[item.input.appID] ?? .defaults) } }
            }
        } catch {
            for item in work { await failed(item.job, error) }
            return
        }
        var outcomes: [(job: CrashStore.Job, input: CrashStore.ProcessingInput, result: CrashStore.ProcessingResult)] = []
        for (item, outcome) in zip(work, analysed) {
            switch outcome {
            case .success(let result): outcomes.append((item.job, item.input, result))
            case .failure(let error): await failed(item.job, error)
            }
        }
        let now = currentMilliseconds()
        var committed = outcomes.map { _ in false }
        do {
            _ = try await store.finish(outcomes.map { ($0.job.seq, $0.result) }, now: now, spike: spike)
            committed = outcomes.map { _ in true }
        } catch {
            for (index, outcome) in outcomes.enumerated() {
                do {
                    _ = try await store.finish(seq: outcome.job.seq, result: outcome.result, now: now, spike: spike)
                    committed[index] = true
                } catch {
                    await failed(outcome.job, error)
                }
            }
        }
        for (outcome, done) in zip(outcomes, committed) where done {
            if outcome.result.state == .failed { failedCounter.increment() } else { processedCounter.increment() }
            if outcome.job.kind == .resymbolicate { requeuedCounter.increment() }
            board.finished(outcome.input.id)
        }
        if committed.contains(true) { webhookSignal.signal() }
        let elapsed = ContinuousClock.now - start
        for _ in jobs { processingTimer.record(elapsed / jobs.count) }
    }

    /// A job whose processing failed: logged, and given up after `maximumAttempts`.
    private func failed(_ job: CrashStore.Job, _ error: any Error) async {
        logger.error("crash processing failed", metadata: ["crashsym.crash_seq": "\(job.seq)", "error": "\(error)"])
        if job.attempts >= Self.maximumAttempts {
            try? await store.abandon(seq: job.seq, reason: "processing failed \(job.attempts) times: \(error)")
        }
    }

    /// Reads, parses, symbolicates and signs one crash, on the calling (thread-pool) thread.
    private func analyse(_ input: CrashStore.ProcessingInput, rules: GroupingRules) throws -> CrashStore.ProcessingResult {
        let path = objects.path(sha256: input.rawSHA256)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError.corrupt("the raw bytes of crash \(input.id) are missing (\(input.rawSHA256))")
        }
        let format = input.inputFormat.flatMap(ReportFormat.init(rawValue:))
        let report: CrashReport
        do {
            report = try Self.parseNow(Array(data), format: format, maxFrames: configuration.maxFrames)
        } catch {
            return CrashStore.ProcessingResult(state: .failed, failure: error.message, missing: [])
        }
        let reportVersion = report.metadata("version") ?? report.metadata("app_version")
        let result = try symbolication.symbolicateNow(report, appID: input.appID,
                                                      version: input.versionGiven ? input.version : reportVersion ?? input.version,
                                                      renderings: .json)
        var json: [UInt8] = []
        ReportWriter.writeJSON(result, into: &json)
        if json.last == 0x0a { json.removeLast() }
        let signature = CrashSignature.compute(for: result, rules: rules)
        return CrashStore.ProcessingResult(
            state: .done, format: report.format.rawValue, signal: report.signal, reportVersion: reportVersion,
            signature: signature.signature, title: signature.title, report: json, missing: Self.missingModules(result))
    }

    /// The app's grouping rules (docs/grouping.md), the built-in ones when it has none.
    func groupingRules(appID: String) async throws -> GroupingRules {
        guard let document = try await store.groupingRules(appID: appID) else { return .defaults }
        do {
            return try GroupingRules(document: document)
        } catch {
            // Stored rules were validated when they were put: this is a rules format change.
            logger.error("stored grouping rules no longer read; using the built-in rules",
                         metadata: ["crashsym.app_id": "\(appID)", "error": "\(error)"])
            return .defaults
        }
    }

    /// Validates and stores the app's grouping rules; returns them in canonical form.
    func setGroupingRules(appID: String, document: [UInt8]) async throws -> String {
        let rules: GroupingRules
        do {
            rules = try GroupingRules(document: document)
        } catch {
            throw ServerError(.badRequest, "grouping rules: \(error)")
        }
        try await store.setGroupingRules(appID: appID, rules: rules.document)
        return rules.document
    }

    /// Parses a report (bounded: frames over the limit are refused) on the thread pool.
    func parse(_ bytes: [UInt8], format: ReportFormat?) async throws -> Result<CrashReport, ServerError> {
        let maxFrames = configuration.maxFrames
        return try await NIOThreadPool.singleton.runIfActive {
            Result { () throws(ServerError) in try Self.parseNow(bytes, format: format, maxFrames: maxFrames) }
        }
    }

    /// `parse`, on the calling thread.
    static func parseNow(_ bytes: [UInt8], format: ReportFormat?, maxFrames: Int) throws(ServerError) -> CrashReport {
        let report: CrashReport
        do {
            report = try CrashReport.parse(String(decoding: bytes, as: UTF8.self), format: format)
        } catch {
            throw ServerError(.badRequest, "cannot read the report: \(error)")
        }
        guard report.frameCount <= maxFrames else {
            throw ServerError(.badRequest, "the report has \(report.frameCount) frames, over the limit of \(maxFrames)")
        }
        return report
    }

    /// Modules with a build-id of which some frame found no symbols.
    static func missingModules(_ result: SymbolicatedReport) -> [(buildID: String, name: String)] {
        var missing: [(buildID: String, name: String)] = []
        var seen = Set<String>()  // a build-id once, however many paths name it
        for (s, stack) in result.report.stacks.enumerated() {
            // A frame the sender symbolicated still lacks the server's symbols: they are awaited,
            // and the crash is processed again when they arrive.
            for (f, frame) in stack.frames.enumerated() where result.frames[s][f].status == .noSymbols || result.frames[s][f].bySender {
                guard let index = frame.module, index < result.report.modules.count,
                      let id = result.report.modules[index].buildID, seen.insert(id).inserted else { continue }
                missing.append((id, result.report.modules[index].name))
            }
        }
        return missing
    }

    // MARK: Late symbols

    /// New build-ids were committed for the app: the crashes that lacked them are queued again.
    func symbolsAdded(appID: String, buildIDs: [String]) async {
        do {
            let queued = try await store.requeue(appID: appID, newBuildIDs: buildIDs, now: currentMilliseconds())
            if queued > 0 {
                logger.info("late symbols: crashes queued again", metadata: ["crashsym.app_id": "\(appID)", "crashsym.crashes": "\(queued)"])
                doorbell.ring()
            }
        } catch {
            // The processor's startup sweep queues them after a restart.
            logger.error("late symbols: cannot queue crashes", metadata: ["crashsym.app_id": "\(appID)", "error": "\(error)"])
        }
    }

    // MARK: Symbolication on request

    /// What `POST …/symbolicate` prints.
    enum Output: String, Sendable {
        case json, text
    }

    /// Symbolicates a report with the app's tables and renders it as the CLI does.
    func symbolicate(appID: String, body: [UInt8], format: ReportFormat?, version: String?, output: Output,
                     explain: Bool) async throws -> [UInt8] {
        let start = ContinuousClock.now
        defer { symbolicateTimer.recordInterval(since: start) }
        let maxFrames = configuration.maxFrames
        let symbolication = symbolication
        // One thread-pool job: check, parse, find the tables, symbolicate and render.
        return try await NIOThreadPool.singleton.runIfActive {
            guard Self.isText(body) else { throw ServerError(.badRequest, "the body is not text (a NUL byte or invalid UTF-8)") }
            let report = try Self.parseNow(body, format: format, maxFrames: maxFrames)
            let result = try symbolication.symbolicateNow(report, appID: appID, version: version,
                                                          renderings: output == .json ? .json : .text)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(1024 + report.frameCount * 256)
            if output == .json { ReportWriter.writeJSON(result, explain: explain, into: &bytes) }
            else { ReportWriter.writeText(result, explain: explain, into: &bytes) }
            return bytes
        }
    }

    /// The frames of each address of table `buildID`, as `crashsym lookup --format json` prints
    /// them (one object per line).
    func lookup(appID: String, buildID: String, addresses: [UInt64]) async throws -> [UInt8] {
        guard let table = try await store.table(appID: appID, buildID: buildID) else {
            throw ServerError(.notFound, "no symbols for build-id \(buildID)")
        }
        let path = objects.path(sha256: table.sha256)
        let tables = symbolication.tables
        return try await NIOThreadPool.singleton.runIfActive {
            let table: SymbolTable
            do {
                table = try tables.table(at: path).table  // opened once, shared with symbolication
            } catch {
                throw ServerError(.internal, "cannot read the table of \(buildID): \(error)")
            }
            var renderer = FrameRenderer(table: table, style: .json)
            var bytes: [UInt8] = []
            for address in addresses {
                do { try renderer.render(address, into: &bytes) } catch {
                    throw ServerError(.internal, "the table of \(buildID) is corrupt: \(error)")
                }
            }
            return bytes
        }
    }
}

extension Timer {
    /// Records the time since `start`.
    func recordInterval(since start: ContinuousClock.Instant) {
        record(ContinuousClock.now - start)
    }

    /// Records `elapsed`.
    func record(_ elapsed: Duration) {
        recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }
}
