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
        await runPeriodically(every: interval, logger: logger, failure: "console: cannot forget old sign-in failures") {
            let forgotten = try await store.forgetSignInFailures(now: currentMilliseconds())
            if forgotten > 0 { logger.debug("console: old sign-in failures forgotten", metadata: ["crashsym.names": "\(forgotten)"]) }
        }
    }
}
