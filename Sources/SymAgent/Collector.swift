import Logging
import SymBytes
import SymHTTP
import SymReport
#if canImport(Glibc)
import Glibc
#endif

/// The agent's one loop: notice complete files in the spools, move each into the durable queue,
/// send the queue oldest first, back off on transient failures. One thread owns the queue and
/// decides every step (take, send, remove); only the uploads themselves run on the
/// `SenderPool`'s threads. Core files enter through the core spool (`STATE/cores`, where
/// `crashsym agent capture` leaves them), which is watched like the others; each is replaced
/// by its report when taken (`CoreSpool`).
public final class Collector {
    /// What `--once` did.
    public struct Summary: Sendable, Equatable {
        public var taken = 0
        public var delivered = 0
        public var rejected = 0
        public var dropped = 0
        /// Reports deleted by the crash-storm limit.
        public var suppressed = 0
        /// Reports still queued (a transient failure stopped the run).
        public var remaining = 0
        /// The last transient failure, when one stopped the run.
        public var failure: String?
    }

    private let configuration: AgentConfiguration
    private let logger: Logger
    private let queue: ReportQueue
    private let forwarder: Forwarder
    private let watcher: SpoolWatcher
    private let retry: RetryPolicy
    private var random = SystemRandomNumberGenerator()
    /// Queued IDs in sending order (taken in this process are appended; IDs sort by time).
    private var order: [String]
    private var head = 0
    /// Files seen but not complete yet, with when to look again.
    private var pending: [SpoolWatcher.Candidate: ContinuousClock.Instant] = [:]
    private var status: AgentStatus
    /// The drop totals the submissions report to the server.
    private let counts: DropCounts
    /// The versions the server knows for build-ids, shared by every sender.
    private let versions = BuildVersions()
    private var statusWritten = ContinuousClock.now
    private var statusDirty = false
    /// Consecutive transient failures, and when the next attempt may start.
    private var failures = 0
    private var nextAttempt = ContinuousClock.now
    private var summary = Summary()
    /// Reports handed to the senders and not answered yet (never dropped by the bound).
    private var sending: Set<String> = []
    /// Complete files waiting to be taken in the next batch.
    private var ready: [(path: String, metadata: ReportQueue.Metadata)] = []
    private var readyPaths: Set<String> = []
    /// The crash-storm limit (nil: none).
    private let storms: StormLimiter?
    /// `--metrics-port` (nil: none).
    private let metrics: MetricsEndpoint?
    /// When a report was last delivered by this process (seconds since 1970).
    private var lastSuccessSeconds: Double?
    /// `--symbols` (nil: reports are sent as taken); one engine, so one cache, for every sender.
    private let symbolication: LocalSymbolication?
    /// The configured spools, then the core spool (`CoreSpool`).
    private let spools: [AgentConfiguration.Spool]
    private let coreDirectory: String
    /// `--systemd-coredump`: systemd-coredump's store, watched like a spool, never changed.
    private let coredumps: CoredumpStore?
    /// The engine that walks and resolves cores: `--symbols`'s, else this host's binaries only.
    private lazy var coreSymbolication = symbolication
        ?? LocalSymbolication(searchPaths: [], cacheDirectory: configuration.stateDirectory + "/symbol-cache")

    /// Opens the state directory (taking its lock) and the spools; fails with a message saying
    /// what to fix.
    public init(configuration: AgentConfiguration, waker: Waker, logger: Logger, metrics: MetricsEndpoint? = nil) throws(AgentError) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        do {
            queue = try ReportQueue(directory: configuration.stateDirectory)
        } catch {
            throw AgentError(error.description)
        }
        symbolication = configuration.symbols.isEmpty ? nil
            : LocalSymbolication(searchPaths: configuration.symbols, cacheDirectory: configuration.stateDirectory + "/symbol-cache")
        status = AgentStatus.load(from: configuration.stateDirectory)
        if status.agentID == nil {
            status.agentID = DropCounts.newAgentID()
            status.store(in: configuration.stateDirectory)
        }
        counts = DropCounts(agentID: status.agentID ?? "", dropped: status.dropped, suppressed: status.suppressed)
        forwarder = try Forwarder(configuration: configuration, symbolication: symbolication, counts: counts, versions: versions)
        coreDirectory = CoreSpool.directory(in: configuration.stateDirectory)
        if mkdir(coreDirectory, 0o700) != 0 && errno != EEXIST {
            throw AgentError("\(coreDirectory): cannot create the core spool: \(String(cString: strerror(errno)))")
        }
        coredumps = configuration.systemdCoredump.map { CoredumpStore(directory: $0, stateDirectory: configuration.stateDirectory) }
        spools = configuration.spools + (coredumps.map { [AgentConfiguration.Spool(path: $0.directory)] } ?? [])
            + [AgentConfiguration.Spool(path: coreDirectory)]
        watcher = try SpoolWatcher(spools: spools.map(\.path), poll: configuration.poll, waker: waker)
        retry = RetryPolicy(maxAttempts: Int.max, initialDelay: configuration.initialBackoff,
                            maximumDelay: configuration.maximumBackoff, maximumRetryAfter: .seconds(3600))
        storms = configuration.maxReportsPerMinute > 0 ? StormLimiter(limit: configuration.maxReportsPerMinute) : nil
        order = queue.entries()
        publishMetrics()
        if !order.isEmpty {
            logger.info("reports queued from an earlier run", metadata: ["crashsym.queue_length": "\(order.count)"])
        }
    }

    /// Takes every complete file in the spools, sends every queued report once, and returns; a
    /// transient failure stops the sending (the rest stays queued for the next run).
    public func runOnce() -> Summary {
        let now = ContinuousClock.now
        for candidate in watcher.list() { consider(candidate, now: now) }
        takeReady()
        while let job = nextJob() {
            if !apply(job.id, forwarder.send(path: job.path, metadata: job.metadata)) { break }
        }
        finish()
        return summary
    }

    /// Runs until the waker is woken (SIGTERM): the uploads under way finish first, and whatever
    /// is queued stays queued. Reports are sent on `connections` threads at once.
    public func run() throws(AgentError) {
        let pool = try SenderPool(configuration: configuration, count: configuration.connections, symbolication: symbolication,
                                  counts: counts, versions: versions)
        logger.info("agent started", metadata: [
            "crashsym.spools": "\(configuration.spools.map(\.path))", "crashsym.mode": "\(configuration.poll ? "poll" : "inotify")",
            "crashsym.state_dir": "\(configuration.stateDirectory)", "crashsym.connections": "\(configuration.connections)",
        ])
        for candidate in watcher.list() { consider(candidate, now: .now) }
        takeReady()
        var listed = ContinuousClock.now
        while true {
            let now = ContinuousClock.now
            for (candidate, deadline) in pending where deadline <= now {
                pending[candidate] = nil
                consider(candidate, now: now)
            }
            if configuration.poll && listed.duration(to: now) >= configuration.settle {
                for candidate in watcher.list() { consider(candidate, now: now) }
                listed = now
            }
            takeReady()
            // Twice as many jobs as senders: a sender that finishes finds its next job waiting
            // instead of waiting for this thread to wake up and hand one out.
            while sending.count < 2 * pool.count, now >= nextAttempt, let job = nextJob() {
                pool.submit(job)
                sending.insert(job.id)
            }
            var timeout: Duration?
            if sending.isEmpty && head < order.count { timeout = max(.zero, now.duration(to: nextAttempt)) }
            if let earliest = pending.values.min() {
                timeout = min(timeout ?? .seconds(3600), max(.zero, now.duration(to: earliest)))
            }
            if configuration.poll { timeout = min(timeout ?? configuration.settle, max(configuration.settle, .milliseconds(100))) }
            writeStatus(force: false)
            if statusDirty {
                // Counters held back by the once-a-second limit are written when it allows, not
                // at the next event (an idle agent would show a stale status and metrics).
                let due = max(.milliseconds(10), .seconds(1) - statusWritten.duration(to: ContinuousClock.now))
                timeout = min(timeout ?? due, due)
            }
            let (candidates, stopped) = watcher.wait(timeout: timeout, also: pool.notifier.descriptor)
            for result in pool.takeResults() {
                sending.remove(result.id)
                apply(result.id, result.outcome)
            }
            if stopped { break }
            let seen = ContinuousClock.now
            for candidate in candidates { consider(candidate, now: seen) }
            if watcher.overflowed {
                logger.warning("inotify queue overflowed: listing the spools again")
                for candidate in watcher.list() { consider(candidate, now: seen) }
            }
            takeReady()
        }
        // Graceful stop: take back the jobs not started (back at the head of the order), let the
        // uploads under way be answered, then stop the senders.
        let unstarted = pool.cancelQueued()
        for job in unstarted { sending.remove(job.id) }
        order.insert(contentsOf: unstarted.map(\.id), at: head)
        while !sending.isEmpty {
            pool.notifier.wait(timeout: .milliseconds(200))
            for result in pool.takeResults() {
                sending.remove(result.id)
                apply(result.id, result.outcome)
            }
        }
        pool.shutdown()
        finish()
        logger.info("agent stopped", metadata: ["crashsym.queue_length": "\(order.count - head)"])
    }

    /// Decides about one file, and takes it when complete.
    private func consider(_ candidate: SpoolWatcher.Candidate, now: ContinuousClock.Instant) {
        let spool = spools[candidate.spool]
        // The core spool's files appear only whole (renamed in from hidden partial names), and so
        // do systemd-coredump's (linked or renamed in once written): complete as soon as seen.
        let complete = candidate.closed || candidate.spool >= configuration.spools.count
        if let coredumps, candidate.spool == configuration.spools.count, !coredumps.wants(candidate.name) { return }
        switch SpoolFile.readiness(directory: spool.path, name: candidate.name, format: spool.format, closed: complete,
                                   settle: configuration.settle, now: now) {
        case .ignore:
            pending[SpoolWatcher.Candidate(spool: candidate.spool, name: candidate.name, closed: false)] = nil
        case .waitUntil(let deadline):
            let key = SpoolWatcher.Candidate(spool: candidate.spool, name: candidate.name, closed: false)
            pending[key] = min(pending[key] ?? deadline, deadline)
        case .take:
            pending[SpoolWatcher.Candidate(spool: candidate.spool, name: candidate.name, closed: false)] = nil
            let path = spool.path + "/" + candidate.name
            guard !readyPaths.contains(path) else { return }
            readyPaths.insert(path)
            ready.append((path, ReportQueue.Metadata(
                appID: spool.appID ?? configuration.appID, version: spool.version ?? configuration.version,
                environment: spool.environment ?? configuration.environment, format: spool.format?.rawValue, source: path)))
            if ready.count >= Self.batchLimit { takeReady() }
        }
    }

    /// Files taken in one batch at most (one sync per batch).
    static let batchLimit = 1000

    /// Moves the complete files found into the queue (one durable batch) and keeps the queue
    /// within its bound.
    func takeReady() {
        guard !ready.isEmpty else { return }
        var batch = ready
        ready.removeAll()
        readyPaths.removeAll()
        // A core is queued as its report; one whose report cannot be written waits in the spool.
        var cores: [String] = []
        var stored: [String] = []
        batch = batch.compactMap { file in
            if let coredumps, file.path.hasPrefix(coredumps.directory + "/") {
                // systemd's core stays where it is; its report is queued.
                let name = String(file.path.dropFirst(coredumps.directory.count + 1))
                guard let report = reportOfStoredCore(name, coredumps) else { return nil }
                stored.append(name)
                var metadata = file.metadata
                metadata.format = ReportFormat.crashsymJSON.rawValue
                return (report, metadata)
            }
            guard file.path.hasPrefix(coreDirectory + "/") && file.path.hasSuffix(".core") else { return file }
            guard let report = reportOfCore(file.path) else { return nil }
            cores.append(file.path)
            var metadata = file.metadata
            metadata.format = ReportFormat.crashsymJSON.rawValue
            return (report, metadata)
        }
        if let storms { batch = limitStorms(batch, storms) }
        let ids: [String?]
        do {
            ids = try queue.take(batch)
        } catch {
            logger.error("cannot queue crash files", metadata: ["crashsym.error": "\(error)"])
            noteError(error.description)
            return
        }
        // Their reports are queued (or deleted by the storm limit): the cores are done with.
        for core in cores { unlink(core) }
        coredumps?.markDone(stored)
        for (id, file) in zip(ids, batch) {
            guard let id else { continue }
            order.append(id)
            summary.taken += 1
            logger.info("crash file queued", metadata: ["crashsym.report": "\(id)", "crashsym.source": "\(file.path)"])
        }
        let dropped = queue.dropOldest(toFit: configuration.maxQueueBytes, keeping: sending)
        if !dropped.isEmpty {
            let gone = Set(dropped)
            order.removeSubrange(0..<head)
            head = 0
            order.removeAll { gone.contains($0) }
            status.dropped += dropped.count
            summary.dropped += dropped.count
            counts.update(dropped: status.dropped, suppressed: status.suppressed)
            logger.warning("queue over its bound: oldest reports dropped", metadata: [
                "crashsym.dropped": "\(dropped.count)", "crashsym.max_queue_bytes": "\(configuration.maxQueueBytes)",
            ])
            writeStatus(force: true)
        }
    }

    /// Writes the report of the core at `path` beside it under a hidden name (which the spools'
    /// rule ignores) and returns that name; the core is removed once the report is queued, so a
    /// stop in between takes the core again. Nil when the report cannot be written (the core
    /// stays for the next attempt).
    private func reportOfCore(_ path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? "core"
        return spoolCoreReport(coreSymbolication.json(ofCore: path), as: "\(coreDirectory)/.\(name).json", source: path,
                               walked: "core walked")
    }

    /// Writes the report of systemd-coredump's core `name` into the core spool under a hidden
    /// name and returns it (nil: it could not be written; the core is tried again later).
    private func reportOfStoredCore(_ name: String, _ store: CoredumpStore) -> String? {
        spoolCoreReport(store.reportJSON(of: name, symbolicator: coreSymbolication.symbolicator),
                        as: "\(coreDirectory)/.systemd-\(name).json", source: "\(store.directory)/\(name)",
                        walked: "systemd-coredump core walked")
    }

    /// Writes a core's report `json` durably at `report` (a hidden name in the core spool) and
    /// returns it; nil, with the error logged and noted against `source`, when it cannot be written.
    private func spoolCoreReport(_ json: [UInt8], as report: String, source: String, walked: Logger.Message) -> String? {
        if let failed = FileIO.writeDurably(json, to: report, scratch: report + ".partial", exclusive: false, permissions: 0o600),
           failed.step != .syncDirectory {
            logger.error("cannot write the report of a core", metadata: ["crashsym.source": "\(source)", "crashsym.errno": "\(failed.code)"])
            noteError("\(source): cannot write its report: \(String(cString: strerror(failed.code)))")
            return nil
        }
        logger.info(walked, metadata: ["crashsym.source": "\(source)", "crashsym.report_bytes": "\(json.count)"])
        return report
    }

    /// The files of `batch` within the crash-storm limit; the others are deleted and counted.
    private func limitStorms(_ batch: [(path: String, metadata: ReportQueue.Metadata)],
                             _ storms: StormLimiter) -> [(path: String, metadata: ReportQueue.Metadata)] {
        let now = ContinuousClock.now
        return batch.filter { file in
            let signature = storms.signature(ofFile: file.path, format: file.metadata.format.flatMap(ReportFormat.init(rawValue:)))
            if storms.admit(signature, now: now) { return true }
            unlink(file.path)
            status.suppressed += 1
            summary.suppressed += 1
            counts.update(dropped: status.dropped, suppressed: status.suppressed)
            status.suppressedBySignature[signature, default: 0] += 1
            if status.suppressedBySignature.count > 100,
               let least = status.suppressedBySignature.min(by: { $0.value < $1.value })?.key {
                status.suppressedBySignature[least] = nil
            }
            statusDirty = true
            logger.notice("crash storm: report deleted", metadata: ["crashsym.source": "\(file.path)", "crashsym.signature": "\(signature)"])
            return false
        }
    }

    /// The oldest queued report not handed out yet (nil: none).
    private func nextJob() -> SenderPool.Job? {
        // IDs before `head` were handed out: forget them now and then, so that a long-running
        // agent's memory does not grow with every report it ever sent.
        if head >= 4096 && head * 2 >= order.count {
            order.removeSubrange(0..<head)
            head = 0
        }
        while head < order.count {
            let id = order[head]
            head += 1
            let path = queue.reportPath(id)
            guard access(path, F_OK) == 0 else { continue }  // dropped by the bound meanwhile
            let metadata = queue.metadata(id) ?? ReportQueue.Metadata(
                appID: configuration.appID, version: configuration.version, environment: configuration.environment, format: nil,
                source: path)
            counts.update(queue: order.count - head)  // what the server hears as this agent's queue
            return SenderPool.Job(id: id, path: path, metadata: metadata)
        }
        return nil
    }

    /// Applies the outcome of one attempt to the queue; false for a transient failure (the report
    /// goes back to the head of the queue, and sending waits for the backoff).
    @discardableResult
    private func apply(_ id: String, _ outcome: Forwarder.Outcome) -> Bool {
        switch outcome {
        case .delivered(let code):
            queue.remove(id)
            failures = 0
            status.delivered += 1
            summary.delivered += 1
            status.lastSuccess = AgentStatus.timestamp()
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            lastSuccessSeconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
            statusDirty = true
            logger.info("crash delivered", metadata: ["crashsym.report": "\(id)", "crashsym.status": "\(code)"])
            return true
        case .rejected(let code, let answer):
            do {
                try queue.reject(id, answer: answer)
            } catch {
                logger.error("cannot move a refused report to rejected/", metadata: ["crashsym.report": "\(id)", "crashsym.error": "\(error)"])
            }
            status.rejected += 1
            summary.rejected += 1
            let text = String(decoding: answer.prefix(300), as: UTF8.self)
            noteError("report \(id) refused (HTTP \(code)): \(text)")
            logger.error("crash refused by the server: moved to rejected/", metadata: [
                "crashsym.report": "\(id)", "crashsym.status": "\(code)", "crashsym.answer": "\(text)",
            ])
            return true
        case .transient(let reason, let retryAfter):
            order.insert(id, at: head)
            failures += 1
            let delay = retry.delay(beforeAttempt: min(failures + 1, 40), retryAfter: retryAfter, using: &random)
            nextAttempt = .now + delay
            summary.failure = reason
            noteError(reason)
            logger.warning("crash not delivered; will retry", metadata: [
                "crashsym.report": "\(id)", "crashsym.error": "\(reason)", "crashsym.delay_ms": "\(delay.curlMillisecondsRoundedUp)",
                "crashsym.failures": "\(failures)",
            ])
            return false
        }
    }

    private func noteError(_ message: String) {
        status.lastError = message
        status.lastErrorTime = AgentStatus.timestamp()
        statusDirty = true
    }

    /// Writes the status file at most once a second (and when forced).
    private func writeStatus(force: Bool) {
        guard statusDirty || force else { return }
        let now = ContinuousClock.now
        guard force || statusWritten.duration(to: now) >= .seconds(1) else { return }
        status.queueLength = order.count - head
        status.queueBytes = queue.totalBytes
        status.running = nil
        status.store(in: configuration.stateDirectory)
        statusWritten = now
        statusDirty = false
        publishMetrics()
    }

    /// Hands the counters to `--metrics-port`'s endpoint.
    private func publishMetrics() {
        guard let metrics else { return }
        var counters = MetricsEndpoint.Snapshot()
        counters.queueLength = order.count - head
        counters.queueBytes = queue.totalBytes
        counters.delivered = status.delivered
        counters.rejected = status.rejected
        counters.dropped = status.dropped
        counters.suppressed = status.suppressed
        counters.lastSuccess = lastSuccessSeconds
        metrics.publish(counters)
    }

    private func finish() {
        summary.remaining = order.count - head
        writeStatus(force: true)
    }
}
