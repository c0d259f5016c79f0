import FoundationEssentials
import Logging
import SymBytes
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The agent as a `Service` (STYLE.md 4): the collector's loop runs on a thread of its own (it
/// blocks in poll(2) and libcurl), and graceful shutdown (SIGTERM) wakes it; the upload under way
/// finishes, and the queue stays on disk for the next start.
public struct CollectorService: Service {
    private let configuration: AgentConfiguration
    private let logger: Logger
    private let waker: Waker

    /// A service for `configuration`.
    public init(configuration: AgentConfiguration, logger: Logger) throws(AgentError) {
        self.configuration = configuration
        self.logger = logger
        waker = try Waker()
    }

    /// Runs the collector until graceful shutdown; throws when it cannot start (state directory
    /// locked or unwritable, a spool missing, inotify refused).
    public func run() async throws {
        let configuration = configuration, logger = logger, waker = waker
        try await withGracefulShutdownHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let started = ConcurrentWork.detach {
                    do {
                        let metrics = try configuration.metricsPort.map { port throws(AgentError) in try MetricsEndpoint(port: port) }
                        defer { metrics?.stop() }
                        let collector = try Collector(configuration: configuration, waker: waker, logger: logger, metrics: metrics)
                        if let metrics {
                            metrics.start()
                            logger.info("metrics on http://127.0.0.1:\(metrics.port)/metrics")
                        }
                        try collector.run()
                        continuation.resume()
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                if !started { continuation.resume(throwing: AgentError("cannot start the collector's thread")) }
            }
        } onGracefulShutdown: {
            waker.wake()
        }
    }
}
