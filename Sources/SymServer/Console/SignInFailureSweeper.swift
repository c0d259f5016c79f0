import Logging
import ServiceLifecycle

/// Forgets the console's failed sign-ins once their window and lockout are over
/// (`MetadataStore.forgetSignInFailures`), so that a guesser walking through names does not grow
/// the table for ever; a name still locked stays locked.
struct SignInFailureSweeper: Service {
    let store: any MetadataStore
    let logger: Logger
    /// Time between passes: a row outlives its use by at most this.
    var interval: Duration = .milliseconds(CrashStore.signInFailureWindowMilliseconds)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                // Nothing is urgent at start-up, when the other services open the store.
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                do {
                    let forgotten = try await store.forgetSignInFailures(now: currentMilliseconds())
                    if forgotten > 0 { logger.debug("console: old sign-in failures forgotten", metadata: ["crashsym.names": "\(forgotten)"]) }
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("console: cannot forget old sign-in failures; the next pass retries", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
