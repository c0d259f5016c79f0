import Crypto
import Foundation
import Logging
import Metrics
import NIOPosix
import ServiceLifecycle
import SymBytes
import SymHTTP

/// Delivers the outbox (`webhook_delivery` rows) to the webhooks, at least once.
///
/// Due deliveries are read oldest first; each webhook receives its deliveries one at a time, in
/// order, and at most `concurrency` webhooks are delivered to at once, each on a thread of the
/// service's own pool (libcurl's blocking transfer, bounded by `timeout`; redirects are not
/// followed; 64 KiB of an answer are read). A 2xx ends a delivery; 408, 429, 5xx, a timeout or a
/// connection failure schedule a retry (exponential backoff from `retryBase`, capped at an hour,
/// with jitter) until `retryHours` after the event; any other answer ends it as failed. Nothing
/// is held in memory between polls: after a kill, the rows say what is left, and a delivery that
/// was in flight is sent again with the same `X-Crashsym-Delivery` id.
struct WebhookDeliveryService: Service {
    let store: any MetadataStore
    let configuration: WebhookConfiguration
    let logger: Logger
    /// Rung when a crash was processed (its transaction may have queued notifications).
    let signal: WebhookSignal
    /// How often the outbox is read when nothing rings `signal` (retries coming due).
    var poll: Duration = .milliseconds(500)
    /// Idle handles with their open connections, kept per pinned address set: a delivery reuses
    /// a connection only to the addresses it checked itself.
    let transfers = CurlTransferPool()

    /// How long ended deliveries stay listed (30 days), and how often older ones are deleted.
    static let keptMilliseconds: Int64 = 30 * 86_400_000
    static let sweepInterval: Int64 = 3_600_000

    private static let delivered = Counter(label: "crashsym_webhook_deliveries_total", dimensions: [("outcome", "delivered")])
    private static let retried = Counter(label: "crashsym_webhook_deliveries_total", dimensions: [("outcome", "retry")])
    private static let failed = Counter(label: "crashsym_webhook_deliveries_total", dimensions: [("outcome", "failed")])

    func run() async throws {
        let pool = NIOThreadPool(numberOfThreads: configuration.concurrency)
        pool.start()
        do {
            try await store.releaseDeliveryClaims()
        } catch is CancellationError {
            // The server stops while starting (its port is busy): nothing to say.
        } catch {
            logger.error("webhooks: cannot free the claims of the previous run", metadata: ["error": "\(error)"])
        }
        await cancelWhenGracefulShutdown { await deliverLoop(pool: pool) }
        try await pool.shutdownGracefully()
    }

    private func deliverLoop(pool: NIOThreadPool) async {
        await withTaskGroup(of: String?.self) { group in
            let poll = self.poll, signal = self.signal
            // A child that returns nil is the clock: the outbox is read again when it ends.
            group.addTask { await signal.wait(upTo: poll); return nil }
            var busy = Set<String>()
            var swept: Int64 = 0
            while !Task.isCancelled {
                let now = currentMilliseconds()
                if now - swept >= Self.sweepInterval {
                    swept = now
                    do {
                        try await store.expireDeliveries(before: now - Self.keptMilliseconds)
                    } catch {
                        if !(error is CancellationError) { logger.error("webhooks: cannot expire old deliveries", metadata: ["error": "\(error)"]) }
                    }
                }
                if busy.count < configuration.concurrency {
                    let due: [CrashStore.DueDelivery]
                    do {
                        due = try await store.dueDeliveries(now: currentMilliseconds(), limit: 200, busy: busy)
                    } catch {
                        if !(error is CancellationError) {
                            logger.error("webhooks: cannot read the outbox", metadata: ["error": "\(error)"])
                        }
                        due = []
                    }
                    var order: [String] = []
                    var byWebhook: [String: [CrashStore.DueDelivery]] = [:]
                    for delivery in due {
                        if byWebhook[delivery.webhookID] == nil { order.append(delivery.webhookID) }
                        byWebhook[delivery.webhookID, default: []].append(delivery)
                    }
                    for webhook in order where busy.count < configuration.concurrency {
                        busy.insert(webhook)
                        let list = byWebhook[webhook] ?? []
                        group.addTask {
                            for delivery in list where !Task.isCancelled { await deliver(delivery, pool: pool) }
                            return webhook
                        }
                    }
                }
                guard let finished = await group.next() else { break }
                if let webhook = finished {
                    busy.remove(webhook)
                } else if !Task.isCancelled {
                    group.addTask { await signal.wait(upTo: poll); return nil }
                }
            }
            group.cancelAll()
        }
    }

    /// One attempt of one delivery, recorded.
    func deliver(_ delivery: CrashStore.DueDelivery, pool: NIOThreadPool) async {
        let started = currentMilliseconds()
        // Several nodes read the same outbox: the one that claims the delivery sends it. The claim
        // outlives the attempt (bounded by the timeout), so a node killed mid-attempt only delays it.
        let claim = Int64(configuration.timeout * 2000) + 30_000
        do {
            guard try await store.claimDelivery(seq: delivery.seq, now: started, until: started + claim) else { return }
        } catch {
            if !(error is CancellationError) { logger.error("webhooks: cannot claim a delivery", metadata: ["error": "\(error)"]) }
            return
        }
        let event: WebhookEvent
        do {
            event = try JSONDecoder().decode(WebhookEvent.self, from: Data(delivery.payload.utf8))
        } catch {
            await record(delivery, at: started, status: nil, error: "the stored event cannot be read: \(error)", latency: 0, retry: false)
            return
        }
        let body = WebhookPayload.body(event, deliveryID: delivery.id, format: delivery.format, publicURL: configuration.publicURL)
        var headers = ["X-Crashsym-Delivery: \(delivery.id)", "X-Crashsym-Event: \(delivery.event.rawValue)"]
        if let secret = delivery.secret { headers.append("X-Crashsym-Signature: " + Self.signature(body, secret: secret)) }
        let request = HTTPRequest(url: delivery.url, body: .bytes(body), contentType: "application/json", headers: headers)
        let timeout = Duration.milliseconds(Int64(configuration.timeout * 1000))
        let connectTimeout = min(timeout, .seconds(5))
        let allowPrivate = configuration.allowPrivate
        let components = URLComponents(string: delivery.url)
        let host = components?.host
        let port = components?.port ?? (components?.scheme?.lowercased() == "https" ? 443 : 80)
        let clock = ContinuousClock.now
        let outcome: Result<HTTPResponse, TransferFailure>
        let refusal: String?
        do {
            (outcome, refusal) = try await pool.runIfActive {
                // Checked again at each attempt (getaddrinfo blocks: here, on the pool): a name may
                // resolve elsewhere than when the webhook was added. libcurl then connects to the
                // addresses checked, not to what a second lookup would answer.
                var pinned = request
                var key = delivery.url
                if let host {
                    switch WebhookAddress.vet(host: host, allowPrivate: allowPrivate) {
                    case .refused(let reason):
                        return (.failure(TransferFailure(kind: .configuration, message: reason, retryable: false)), reason)
                    case .allowed(let addresses) where addresses.isEmpty:
                        return (.failure(TransferFailure(kind: .connection, message: "\(host) does not resolve", retryable: true)), nil)
                    case .allowed(let addresses):
                        pinned.pinnedAddresses = [WebhookAddress.pin(host: host, port: port, addresses: addresses)]
                        key = pinned.pinnedAddresses[0]
                    }
                }
                do throws(TransferFailure) {
                    return (try transfers.withTransfer(key: key) { transfer in
                        transfer.perform(pinned, userAgent: "crashsym-webhooks/1", timeout: timeout, connectTimeout: connectTimeout,
                                         stallTimeout: timeout, sink: .memory(limit: 64 << 10))
                    }, nil)
                } catch {
                    return (.failure(error), nil)
                }
            }
        } catch {
            return  // shutting down: the row is still pending, the next start sends it
        }
        if let refusal {
            await record(delivery, at: started, status: nil, error: refusal, latency: 0, retry: false)
            return
        }
        let elapsed = ContinuousClock.now - clock
        let latency = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        switch outcome {
        case .success(let response) where (200..<300).contains(response.status):
            await record(delivery, at: started, status: response.status, error: nil, latency: latency, retry: nil)
        case .success(let response):
            let retry = response.status >= 500 || response.status == 408 || response.status == 429
            await record(delivery, at: started, status: response.status, error: "HTTP \(response.status)", latency: latency, retry: retry)
        case .failure(let failure):
            await record(delivery, at: started, status: nil, error: failure.message, latency: latency,
                         retry: failure.kind != .configuration)
        }
    }

    /// `sha256=` and the HMAC-SHA256 of `body` keyed with `secret`, in hex (GitHub's scheme).
    static func signature(_ body: [UInt8], secret: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Array(secret.utf8)))
        return "sha256=" + hexString(Array(code))
    }

    /// The wait before attempt `attempt + 1`: `base` doubled per attempt, at most an hour, and a
    /// random half of it taken off so that receivers coming back are not hit all at once.
    static func backoff(afterAttempt attempt: Int, base: Double) -> Double {
        let full = min(3600, base * pow(2, Double(min(attempt - 1, 30))))
        return full * Double.random(in: 0.5...1)
    }

    /// Records an attempt: `retry` nil for delivered, true to try again later (if within the
    /// retry window), false to give up.
    private func record(_ delivery: CrashStore.DueDelivery, at: Int64, status: Int?, error: String?, latency: Int64, retry: Bool?) async {
        let attempt = delivery.attempts + 1
        var state = CrashStore.DeliveryState.delivered
        var next = at
        var message = error
        if let retry {
            let wait = Self.backoff(afterAttempt: attempt, base: configuration.retryBase)
            next = at + Int64(wait * 1000)
            if retry && next <= delivery.createdMilliseconds + Int64(configuration.retryHours * 3_600_000) {
                state = .pending
                Self.retried.increment()
            } else {
                state = .failed
                if retry { message = "gave up after \(attempt) attempts: " + (error ?? "") }
                Self.failed.increment()
            }
        } else {
            Self.delivered.increment()
        }
        let metadata: Logger.Metadata = [
            "crashsym.webhook_id": "\(delivery.webhookID)", "crashsym.delivery_id": "\(delivery.id)",
            "crashsym.status": "\(status.map(String.init) ?? "-")", "crashsym.attempt": "\(attempt)",
        ]
        switch state {
        case .delivered: logger.debug("webhook delivered", metadata: metadata)
        case .pending: logger.info("webhook delivery failed, will retry: \(error ?? "")", metadata: metadata)
        case .failed: logger.warning("webhook delivery failed: \(message ?? "")", metadata: metadata)
        }
        do {
            try await store.recordAttempt(seq: delivery.seq, CrashStore.DeliveryAttempt(
                at: at, status: status, error: message, latencyMilliseconds: latency, state: state, nextAttempt: next))
        } catch {
            // Left pending: it is sent again (same id), which at-least-once allows; not at once, so
            // that a store that keeps failing does not turn into a flood of requests.
            logger.error("webhooks: cannot record an attempt", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
