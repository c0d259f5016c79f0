/// When to try a request again: exponential backoff with jitter, bounded attempts, and how far a
/// server's `Retry-After` is trusted.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in total, the first included (1: never retry).
    public var maxAttempts: Int
    /// Delay before the second attempt (before jitter).
    public var initialDelay: Duration
    /// Upper bound of the backoff delay.
    public var maximumDelay: Duration
    /// Upper bound of a server's `Retry-After`; longer answers are cut to this.
    public var maximumRetryAfter: Duration

    /// Creates a policy.
    public init(maxAttempts: Int = 6, initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30),
                maximumRetryAfter: Duration = .seconds(300)) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The backoff before attempt `attempt` (2 for the first retry): `initialDelay · 2^(attempt-2)`,
    /// capped at `maximumDelay`, then drawn uniformly from its upper half so that clients that failed
    /// together do not retry together.
    public func backoff(beforeAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(0, attempt - 2), 30)
        let ceiling = min(initialDelay * (1 << exponent), maximumDelay)
        let fraction = Double.random(in: 0.5...1.0, using: &generator)
        return ceiling * fraction
    }

    /// The wait before the next attempt: the server's `Retry-After` when it gave one (cut to
    /// `maximumRetryAfter`), otherwise the backoff.
    public func delay(beforeAttempt attempt: Int, retryAfter: Duration?,
                      using generator: inout some RandomNumberGenerator) -> Duration {
        if let retryAfter { return min(retryAfter, maximumRetryAfter) }
        return backoff(beforeAttempt: attempt, using: &generator)
    }
}
