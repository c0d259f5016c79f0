import TestSupport
import SymHTTP
import Testing
@testable import SymClient

/// Backoff arithmetic with a seeded generator.
@Suite struct RetryPolicyTests {
    @Test("backoff doubles, is capped, and stays in the upper half", arguments: [1, 2, 3, 42])
    func backoffBounds(seed: UInt64) {
        let policy = RetryPolicy(maxAttempts: 20, initialDelay: .milliseconds(500), maximumDelay: .seconds(30))
        var generator = SplitMix64(seed: seed)
        var distinct = Set<Duration>()
        for attempt in 2...20 {
            let ceiling = min(Duration.milliseconds(500) * (1 << min(attempt - 2, 30)), .seconds(30))
            let delay = policy.backoff(beforeAttempt: attempt, using: &generator)
            #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay)")
            distinct.insert(delay)
        }
        #expect(distinct.count > 10)  // jittered, not a fixed schedule
    }

    @Test func retryAfterWinsAndIsCapped() {
        let policy = RetryPolicy(maximumRetryAfter: .seconds(60))
        var generator = SplitMix64(seed: 7)
        #expect(policy.delay(beforeAttempt: 2, retryAfter: .seconds(5), using: &generator) == .seconds(5))
        #expect(policy.delay(beforeAttempt: 2, retryAfter: .seconds(3600), using: &generator) == .seconds(60))
    }

    @Test func aHugeAttemptNumberDoesNotOverflow() {
        var generator = SplitMix64(seed: 1)
        let delay = RetryPolicy().backoff(beforeAttempt: Int.max, using: &generator)
        #expect(delay <= .seconds(30))
    }

    @Test func atLeastOneAttempt() {
        #expect(RetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }
}
