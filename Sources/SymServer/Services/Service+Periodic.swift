import Logging
import ServiceLifecycle

extension Service {
    /// Runs `pass` every `interval`, the first after one interval, until graceful shutdown; a
    /// pass that fails is logged (`failure` says what failed) and the next one retries.
    func runPeriodically(every interval: Duration, logger: Logger, failure: String,
                         _ pass: @escaping @Sendable () async throws -> Void) async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                do {
                    try await pass()
                } catch is CancellationError {
                    break
                } catch {
                    logger.warning("\(failure); the next pass retries", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
