import Crypto
import Foundation
import Logging
import Metrics
import NIOPosix
import SymBytes
import SymCore
import SymReport
import SymTable
import Symbolication

/// The crash service: ingestion (bytes durable, then the row and its job, then the answer),
/// processing (parse, symbolicate, sign, group), symbolication on request, late symbols.
/// Routes call it; it speaks `ServerError` to them and `StoreError` comes from below.
final class CrashService: Sendable {
    let store: any MetadataStore
    let objects: any ObjectStore
    let configuration: CrashServiceConfiguration
    let symbolication: StoreSymbolication
    let doorbell = Doorbell()
    /// Wakes the re-signing service after a change of grouping rules.
    let regroupBell = Doorbell()
    let board = CompletionBoard()
    let limiter: CrashRateLimiter
    /// Bytes of upload bodies held in memory across requests (`--max-crash-bytes-in-flight`).
    let bodyBytes: UploadLimiter
    let logger: Logger
    /// When a group's growth is a spike (notifications, docs/webhooks.md).
    let spike: CrashStore.SpikeRule
    /// Wakes the webhook delivery service after each processed crash.
    let webhookSignal = WebhookSignal()
    /// Ingests waiting for their pack (`ingest`): the bodies of those waiting together are
    /// written as one object.
    let packing = WaitingGroup<PackWaiting>(limit: CrashPack.memberCountLimit, weightLimit: CrashPack.byteLimit,
                                            weight: { $0.body.count })

    private let acceptedCounter = Counter(label: "crashsym_crashes_accepted_total")
    /// Minidumps accepted by `POST …/minidump` (they count in neither crash counter above).
    let minidumpsAccepted = Counter(label: "crashsym_minidumps_accepted_total")
    private let processedCounter = Counter(label: "crashsym_crashes_processed_total")
    private let failedCounter = Counter(label: "crashsym_crashes_failed_total")
    private let requeuedCounter = Counter(label: "crashsym_crashes_requeued_total")
    private let processingTimer = Timer(label: "crashsym_crash_processing_seconds")
    private let symbolicateTimer = Timer(label: "crashsym_symbolicate_seconds")

    init(metadata: any MetadataStore, objects: ObjectStore, configuration: CrashServiceConfiguration, logger: Logger,
         spike: CrashStore.SpikeRule = CrashStore.SpikeRule()) {
        self.spike = spike
        store = metadata
        self.objects = objects
        self.configuration = configuration
        symbolication = StoreSymbolication(metadata: metadata, objects: objects, tableCacheBytes: configuration.tableCacheMB << 20)
        limiter = CrashRateLimiter(perMinute: configuration.maxCrashesPerMinute)
        bodyBytes = UploadLimiter(limit: configuration.maxCrashBytesInFlight)
        self.logger = logger
    }

    // MARK: Ingestion

    /// What a client may say about a crash besides its bytes.
    struct Submission: Sendable {
        var version: String?
        var host: String?
        /// The OS and kernel the crash happened on (the agent's `sysname release machine`).
        var system: String?
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
        let crash = CrashStore.NewCrash(
            appID: appID, version: submission.version, host: submission.host, system: submission.system,
            environment: submission.environment,
            inputFormat: submission.inputFormat?.rawValue, rawSHA256: sha256, rawSize: body.count,
            idempotencyKey: submission.idempotencyKey, receivedMilliseconds: currentMilliseconds())
        let receipt: CrashStore.Receipt
        if body.count <= CrashPack.memberLimit {
            receipt = try await withCheckedThrowingContinuation { continuation in
                if packing.add(PackWaiting(crash: crash, body: body, continuation: continuation)) {
                    Task { await packWaiting() }
                }
            }
        } else {
            // A large report is an object of its own, as every report was before packs.
            try await objects.put(bytes: body, sha256: sha256)
            receipt = try await store.accept(crash)
            try await objects.confirm(bytes: body, sha256: sha256)
        }
        if !receipt.replayed {
            acceptedCounter.increment()
            doorbell.ring()
        }
        return receipt
    }

    /// An ingest waiting for its pack.
    struct PackWaiting: Sendable {
        var crash: CrashStore.NewCrash
        var body: [UInt8]
        var continuation: CheckedContinuation<CrashStore.Receipt, any Error>
    }

    /// Writes the waiting ingests' bodies a pack at a time until none waits: each pack is made
    /// durable as one object, then its rows are committed (`commit`, while the next pack is
    /// written).
    private func packWaiting() async {
        while let group = packing.next() {
            let pack: (sha256: String, bytes: [UInt8], offsets: [Int64])
            do {
                pack = try await CrashPack.put(group.map(\.body), into: objects)
            } catch {
                for waiting in group { waiting.continuation.resume(throwing: error) }
                continue
            }
            let sha256 = pack.sha256
            let crashes = zip(group, pack.offsets).map { waiting, offset in
                var crash = waiting.crash
                crash.rawPack = sha256
                crash.rawOffset = offset
                return crash
            }
            Task { await commit(group, crashes, pack: pack.bytes, sha256: sha256) }
        }
    }

    /// Commits the rows of a pack's crashes (together: the metadata store groups concurrent
    /// accepts into one transaction), confirms the pack once (put again if a remover took it
    /// before the commit, as `put(files:thenCommit:)` does), then answers each ingest.
    private func commit(_ group: [PackWaiting], _ crashes: [CrashStore.NewCrash], pack: [UInt8], sha256: String) async {
        let store = store
        // One task per row, all sent at once, awaited in order. (A task group returning
        // (index, result) pairs, collected into an array, answered most ingests "not committed"
        // and once trapped on an index in the release build, never in debug builds; not
        // understood yet, so no index is carried.)
        let accepts = crashes.map { crash in
            Task { () -> Result<CrashStore.Receipt, any Error> in
                do { return .success(try await store.accept(crash)) } catch { return .failure(error) }
            }
        }
        var results: [Result<CrashStore.Receipt, any Error>] = []
        results.reserveCapacity(accepts.count)
        for accept in accepts { results.append(await accept.value) }
        if results.contains(where: { (try? $0.get()) != nil }) {
            do {
                try await objects.confirm(bytes: pack, sha256: sha256)
            } catch {
                results = results.map { $0.flatMap { _ in .failure(error) } }
            }
        }
        for (waiting, result) in zip(group, results) { waiting.continuation.resume(with: result) }
    }

    /// Waits up to `seconds` for crash `id` to be processed; returns its state then.
    func waitForProcessing(appID: String, receipt: CrashStore.Receipt, seconds: Double) async throws -> CrashStore.Receipt {
        guard receipt.state == .pending, seconds > 0 else { return receipt }
        let ticket = board.ticket(for: receipt.id)
        var current = try await store.crash(appID: appID, id: receipt.id).summary
        if current.state == .pending && store.jobNotifications != nil {
            // Several nodes: another may process it, which this node's board never hears of;
            // the board still answers at once for this node's own workers.
            let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
            var ticket = ticket
            while true {
                await board.wait(for: receipt.id, ticket: ticket, timeout: max(.zero, min(.milliseconds(200), deadline - ContinuousClock.now)))
                guard ContinuousClock.now < deadline else {
                    current = try await store.crash(appID: appID, id: receipt.id).summary
                    break
                }
                ticket = board.ticket(for: receipt.id)  // before the read: a finish after it is not missed
                current = try await store.crash(appID: appID, id: receipt.id).summary
                if current.state != .pending {
                    await board.wait(for: receipt.id, ticket: ticket, timeout: .zero)
                    break
                }
            }
        } else if current.state == .pending {
            await board.wait(for: receipt.id, ticket: ticket, timeout: .milliseconds(Int64(seconds * 1000)))
            current = try await store.crash(appID: appID, id: receipt.id).summary
        } else {
            await board.wait(for: receipt.id, ticket: ticket, timeout: .zero)
        }
        return CrashStore.Receipt(id: receipt.id, state: current.state, groupID: current.groupID, replayed: receipt.replayed)
    }

    /// Whether `bytes` is text: valid UTF-8 without NUL bytes.
    static func isText(_ bytes: [UInt8]) -> Bool {
        // Reports are nearly all ASCII: eight bytes at a time while none is NUL or over 0x7F (the
        // decoder below alone took 2.5 % of the server's CPU on `POST …/symbolicate`); from the
        // first word that has one (a scalar boundary, as all before it is ASCII), the decoder.
        let ascii = bytes.withUnsafeBytes { raw in
            let high: UInt64 = 0x8080_8080_8080_8080, ones: UInt64 = 0x0101_0101_0101_0101
            var offset = 0
            while offset + 8 <= raw.count {
                let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                // `(w - ones) & ~w & high` is nonzero exactly when some byte of `w` is zero.
                guard word & high == 0, (word &- ones) & ~word & high == 0 else { break }
                offset += 8
            }
            return offset
        }
        let rest = bytes[ascii...]
        guard !rest.contains(0) else { return false }
        var iterator = rest.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    // MARK: Processing

    /// Attempts after which a crash whose processing keeps failing is marked failed.
    static let maximumAttempts = 5

    /// Processes leased jobs: the crashes are read, symbolicated and grouped on the thread pool
    /// (one job for the batch, each crash on its own), and the outcomes committed with the end of
    /// their jobs in one transaction. Should that transaction fail, each is committed alone, so
    /// one crash's failure does not hold back the others.
    ///
    /// `watch` follows the thread-pool work crash by crash for the CPU-time watchdog; a batch it
    /// gave up commits nothing (its jobs were failed or handed back meanwhile).
    func process(_ jobs: [CrashStore.Job], watch: ProcessingWatch = ProcessingWatch()) async {
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
        // The raw bytes: read inside the thread-pool job from a local directory (a job per
        // crash cost more than reading), else first, here (the object store may be remote).
        let local = objects.localReader
        // A minidump is mapped from a local file of the object store (beginMinidump).
        let remote = local == nil ? work.indices.filter { work[$0].input.inputFormat != CrashStore.minidumpFormat } : []
        var raws: [Result<[UInt8], any Error>] = work.map { _ in .success([]) }
        for (index, raw) in zip(remote, await readRaws(remote.map { work[$0].input })) { raws[index] = raw }
        var analysed: [Result<CrashStore.ProcessingResult, any Error>] = []
        do {
            let rules = rules, raws = raws
            // With a store that reads synchronously, one thread-pool job does everything; otherwise
            // the reports are parsed there, their tables read here, and a second job symbolicates.
            var steps = try await NIOThreadPool.singleton.runIfActive { [self] in
                defer { watch.end() }
                return zip(work, raws).map { item, raw in
                    watch.begin(seq: item.job.seq, id: item.input.id)
                    return Result {
                        var raw = raw
                        if let local, item.input.inputFormat != CrashStore.minidumpFormat {
                            raw = Result { try local.readNow(raw: item.input.raw, limit: Self.maximumRawBytes) }
                                .mapError { error in
                                    if case StoreError.notFound = error, item.input.rawPack != nil { return PackMoved() }
                                    return Self.rawFailure(error, item.input)
                                }
                        }
                        return try begin(item.input, raw: raw.get(), rules: rules[item.input.appID] ?? .defaults)
                    }
                }
            }
            // Crashes whose pack was compacted after their rows were read: read again from the
            // row's new pack, then parsed as the others were.
            let moved = steps.indices.filter { if case .failure(is PackMoved) = steps[$0] { true } else { false } }
            if !moved.isEmpty {
                var again: [(index: Int, raw: Result<[UInt8], any Error>)] = []
                for index in moved { again.append((index, await readRaw(work[index].input))) }
                let redone = try await NIOThreadPool.singleton.runIfActive { [self, again] in
                    defer { watch.end() }
                    return again.map { index, raw in
                        watch.begin(seq: work[index].job.seq, id: work[index].input.id)
                        return Result { try begin(work[index].input, raw: raw.get(), rules: rules[work[index].input.appID] ?? .defaults) }
                    }
                }
                for (index, step) in zip(moved, redone) { steps[index] = step }
            }
            var pending: [(index: Int, parsed: Parsed, stored: ReportTables)] = []
            for (index, step) in steps.enumerated() {
                switch step {
                case .success(.done(let result)): analysed.append(.success(result))
                case .success(.needsTables(let parsed)):
                    analysed.append(.failure(StoreError.unavailable("not symbolicated")))
                    do {
                        let stored = try await symbolication.storedTables(parsed.wanted, appID: parsed.input.appID,
                                                                          version: parsed.version)
                        pending.append((index, parsed, stored))
                    } catch {
                        analysed[index] = .failure(error)
                    }
                case .failure(let error): analysed.append(.failure(error))
                }
            }
            if !pending.isEmpty {
                let pendingWork = pending
                let finished = try await NIOThreadPool.singleton.runIfActive { [self] in
                    defer { watch.end() }
                    return pendingWork.map { item in
                        watch.begin(seq: item.parsed.input.seq, id: item.parsed.input.id)
                        return Result { try complete(item.parsed, rules: rules[item.parsed.input.appID] ?? .defaults, stored: item.stored) }
                    }
                }
                for (item, result) in zip(pending, finished) { analysed[item.index] = result }
            }
        } catch {
            for item in work { await failed(item.job, error) }
            return
        }
        // Given up by the watchdog while it ran: the crash over its budget is failed, the others
        // are another worker's now.
        if watch.isAbandoned { return }
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

    /// Fails crash `seq` (id `id`) of `jobs`, whose processing took `cpu` of CPU time, over the
    /// budget, and hands the batch's other jobs back at once (their lease ended), so that other
    /// workers take them. This worker and its pool thread stay held until the runaway call
    /// returns (a thread cannot be stopped from outside).
    func giveUp(_ jobs: [CrashStore.Job], over seq: Int64, id: String, cpu: Duration) async {
        let limit = configuration.maxCrashCPUSeconds
        let reason = "processing took over \(limit) s of CPU time (--max-crash-cpu-seconds); given up: "
            + "the report, or a symbol table it needs, is too costly to process"
        logger.error("crash processing over its CPU budget", metadata: ["crashsym.crash_seq": "\(seq)", "crashsym.cpu": "\(cpu)"])
        failedCounter.increment()
        do {
            try await store.abandon(seq: seq, reason: reason)
            try await store.renewLeases(seqs: jobs.map(\.seq).filter { $0 != seq }, now: 0, lease: 0)
        } catch {
            logger.error("cannot give up a crash job", metadata: ["crashsym.crash_seq": "\(seq)", "error": "\(error)"])
        }
        board.finished(id)
        doorbell.ring()
    }

    /// The largest raw crash read back for processing.
    static let maximumRawBytes = 1 << 30

    /// The error of a raw crash that could not be read: missing bytes are the crash's corruption.
    /// The raw bytes of a crash to process (a failure as `rawFailure` says). A pack compacted
    /// after the row was read is gone: the row is read again and the member read from its new
    /// pack (`PackCompactor` removes the old pack only once the rows name the new one).
    func readRaw(_ input: CrashStore.ProcessingInput) async -> Result<[UInt8], any Error> {
        do {
            return .success(try await objects.read(raw: input.raw, limit: Self.maximumRawBytes) {
                try await store.processingInputs(seqs: [input.seq])[input.seq]?.raw
            })
        } catch {
            return .failure(Self.rawFailure(error, input))
        }
    }

    /// The raw bytes of `inputs` from a remote store: the members of one pack with one ranged
    /// read spanning them (the crashes of a pack arrive, and are leased, together), each checked
    /// against its SHA-256; the others, and the members of a span that cannot be read whole (a
    /// pack compacted meanwhile), one read each (`readRaw`).
    func readRaws(_ inputs: [CrashStore.ProcessingInput]) async -> [Result<[UInt8], any Error>] {
        var raws: [Result<[UInt8], any Error>?] = inputs.map { _ in nil }
        let packed = Dictionary(grouping: inputs.indices.filter { inputs[$0].rawPack != nil }) { inputs[$0].rawPack! }
        for (pack, indices) in packed where indices.count > 1 {
            let members = indices.map { inputs[$0].raw }
            guard members.allSatisfy({ (try? $0.checkBounds(limit: CrashPack.memberLimit)) != nil && $0.size >= 0 }),
                  let start = members.map(\.offset).min(), let end = members.map({ $0.offset + Int64($0.size) }).max(),
                  end - start <= Int64(CrashPack.byteLimit + CrashPack.memberLimit) else { continue }
            guard let span = try? await objects.read(sha256: pack, range: UInt64(start)..<UInt64(end), limit: Int(end - start)) else {
                continue
            }
            for (index, member) in zip(indices, members) {
                let from = min(span.count, Int(member.offset - start)), to = min(span.count, from + member.size)
                raws[index] = Result { try member.checked(Array(span[from..<to])) }.mapError { Self.rawFailure($0, inputs[index]) }
            }
        }
        var all: [Result<[UInt8], any Error>] = []
        for (index, raw) in raws.enumerated() {
            if let raw { all.append(raw) } else { all.append(await readRaw(inputs[index])) }
        }
        return all
    }

    /// A pack member read on the calling thread was not found: its pack may have been compacted.
    struct PackMoved: Error {}

    static func rawFailure(_ error: any Error, _ input: CrashStore.ProcessingInput) -> any Error {
        if case StoreError.notFound = error {
            return StoreError.corrupt("the raw bytes of crash \(input.id) are missing (\(input.rawSHA256))")
        }
        return error
    }

    /// A job whose processing failed: logged, and given up after `maximumAttempts`.
    private func failed(_ job: CrashStore.Job, _ error: any Error) async {
        logger.error("crash processing failed", metadata: ["crashsym.crash_seq": "\(job.seq)", "error": "\(error)"])
        // An object store that is down is not the crash's fault: its job is leased again later.
        if case StoreError.unavailable = error { return }
        if job.attempts >= Self.maximumAttempts {
            try? await store.abandon(seq: job.seq, reason: "processing failed \(job.attempts) times: \(error)")
        }
    }

    /// A crash read and parsed, waiting for its tables.
    struct Parsed: Sendable {
        /// What was read: a report, or a minidump whose stacks are still to be walked.
        enum Content: Sendable {
            case report(CrashReport)
            case minidump(Minidump)
        }

        var input: CrashStore.ProcessingInput
        var content: Content
        var reportVersion: String?
        /// The version whose tables serve modules without a build-id.
        var version: String
        /// The build-ids of the modules, and the names of those without one: the tables to read.
        var wanted: StoreSymbolication.Wanted
    }

    /// How far `begin` got with a crash.
    enum Step: Sendable {
        /// Processed (or failed to parse).
        case done(CrashStore.ProcessingResult)
        /// Parsed; the store reads no tables synchronously, so they are read before `complete`.
        case needsTables(Parsed)
    }

    /// Parses one crash's raw bytes on the calling (thread-pool) thread and, when the store reads
    /// synchronously, symbolicates and signs it too.
    private func begin(_ input: CrashStore.ProcessingInput, raw data: [UInt8], rules: GroupingRules) throws -> Step {
        if input.inputFormat == CrashStore.minidumpFormat { return try beginMinidump(input, rules: rules) }
        let format = input.inputFormat.flatMap(ReportFormat.init(rawValue:))
        let report: CrashReport
        do {
            report = try Self.parseNow(data, format: format, maxFrames: configuration.maxFrames)
        } catch {
            return .done(CrashStore.ProcessingResult(state: .failed, failure: error.message, missing: []))
        }
        // As the crash records it (`finish` keeps 128 characters): names are matched, and their
        // misses recorded, under the same version.
        let reportVersion = report.statedVersion
        let parsed = Parsed(input: input, content: .report(report), reportVersion: reportVersion,
                            version: input.versionGiven ? input.version : reportVersion ?? input.version,
                            wanted: StoreSymbolication.Wanted(report))
        return try next(parsed, rules: rules)
    }

    /// `parsed` completed at once when the store reads its tables synchronously, else waiting for them.
    func next(_ parsed: Parsed, rules: GroupingRules) throws -> Step {
        guard let stored = try symbolication.storedTablesNow(parsed.wanted, appID: parsed.input.appID, version: parsed.version) else {
            return .needsTables(parsed)
        }
        return .done(try complete(parsed, rules: rules, stored: stored))
    }

    /// Symbolicates (walking a minidump first) and signs a parsed crash with its tables, on the
    /// calling (thread-pool) thread.
    private func complete(_ parsed: Parsed, rules: GroupingRules, stored: ReportTables) throws -> CrashStore.ProcessingResult {
        switch parsed.content {
        case .report(let report):
            let result = try symbolication.symbolicateNow(report, appID: parsed.input.appID, version: parsed.version,
                                                          renderings: .json, stored: stored)
            return Self.outcome(result, format: report.format.rawValue, reportVersion: parsed.reportVersion, rules: rules)
        case .minidump(let dump):
            return try completeMinidump(dump, parsed: parsed, rules: rules, stored: stored)
        }
    }

    /// A symbolicated crash as stored: its JSON model, signature and missing modules.
    static func outcome(_ result: SymbolicatedReport, format: String, reportVersion: String?,
                        rules: GroupingRules) -> CrashStore.ProcessingResult {
        var json: [UInt8] = []
        // About 700 bytes a frame (the bench's 50-frame report: 34 KB): written without regrowing.
        json.reserveCapacity(2048 + result.report.frameCount * 768)
        ReportWriter.writeJSON(result, into: &json)
        if json.last == 0x0a { json.removeLast() }
        let signature = CrashSignature.compute(for: result, rules: rules)
        return CrashStore.ProcessingResult(
            state: .done, format: format, signal: result.report.signal, reportVersion: reportVersion,
            signature: signature.signature, title: signature.title, report: json, missing: Self.missingModules(result),
            missingNames: Self.missingNames(result), grouping: signature.keptBytes)
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
        if try await store.replaceGroupingRules(appID: appID, rules: rules.document, now: currentMilliseconds()) {
            regroupBell.ring()  // the app's crashes are signed again in the background
        }
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

    /// Names of modules without a build-id of which some frame found no symbols (no table of
    /// the version has the name, or several have: ambiguous).
    static func missingNames(_ result: SymbolicatedReport) -> [String] {
        var names: [String] = []
        var seen = Set<Int>()
        for (s, stack) in result.report.stacks.enumerated() {
            for (f, frame) in stack.frames.enumerated() where result.frames[s][f].status == .noSymbols {
                guard let index = frame.module, index < result.report.modules.count, seen.insert(index).inserted,
                      result.report.modules[index].buildID == nil else { continue }
                names.append(result.report.modules[index].name)
            }
        }
        return names
    }

    // MARK: Late symbols

    /// New build-ids were committed for the app (tables named `names`, for version `version`):
    /// the crashes that lacked them are queued again, by build-id, and by name for those of the
    /// version whose modules the report gave without a build-id.
    func symbolsAdded(appID: String, buildIDs: [String], version: String? = nil, names: [String] = []) async {
        symbolication.remembered.forget(appID: appID)
        do {
            var queued = try await store.requeue(appID: appID, newBuildIDs: buildIDs, now: currentMilliseconds())
            if let version { queued += try await store.requeue(appID: appID, version: version, names: names, now: currentMilliseconds()) }

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
        @Sendable func render(_ report: CrashReport, _ stored: ReportTables) throws -> [UInt8] {
            let result = try symbolication.symbolicateNow(report, appID: appID, version: version,
                                                      renderings: output == .json ? .json : .text, stored: stored)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(1024 + report.frameCount * 768)  // about 700 bytes of JSON a frame
            if output == .json { ReportWriter.writeJSON(result, explain: explain, into: &bytes) }
            else { ReportWriter.writeText(result, explain: explain, into: &bytes) }
            return bytes
        }
        // One thread-pool job: check, parse, find the tables, symbolicate and render; with a store
        // that reads no tables synchronously, they are read between two jobs.
        let first = try await NIOThreadPool.singleton.runIfActive { () throws -> Rendering in
            guard Self.isText(body) else { throw ServerError(.badRequest, "the body is not text (a NUL byte or invalid UTF-8)") }
            let report = try Self.parseNow(body, format: format, maxFrames: maxFrames)
            guard let stored = try symbolication.requestTablesNow(for: report, appID: appID, version: version) else {
                return .parsed(report)
            }
            return .rendered(try render(report, stored))
        }
        switch first {
        case .rendered(let bytes): return bytes
        case .parsed(let report):
            let stored = try await symbolication.requestTables(for: report, appID: appID, version: version)
            return try await NIOThreadPool.singleton.runIfActive { try render(report, stored) }
        }
    }

    /// How far the first thread-pool job of a request got.
    private enum Rendering: Sendable {
        case rendered([UInt8])
        /// Parsed; its tables are read before the second job.
        case parsed(CrashReport)
    }

    /// The frames of each address of table `buildID`, as `crashsym lookup --format json` prints
    /// them (one object per line).
    func lookup(appID: String, buildID: String, addresses: [UInt64]) async throws -> [UInt8] {
        guard let bytes = try await symbolication.lookup(appID: appID, buildID: buildID, addresses: addresses) else {
            throw ServerError(.notFound, "no symbols for build-id \(buildID)")
        }
        return bytes
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
