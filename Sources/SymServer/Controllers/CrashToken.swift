/// One crash of an app's rate limit (`CrashRateLimiter`), taken by a request before its body is
/// read and held while it decides whether it keeps a crash: the limit counts crashes kept, so a
/// request that ends without `keep()` (refused after taking it, or answered as a replay of an
/// earlier crash) gives it back, however it ends. The one way the crash routes count.
struct CrashToken: ~Copyable {
    private let limiter: CrashRateLimiter
    private let appID: String
    private var kept = false

    /// Takes a token of `appID` from `limiter`; `429` with `Retry-After` when none is left.
    init(_ appID: String, from limiter: CrashRateLimiter) throws {
        if let retryAfter = limiter.take(appID) {
            throw ServerError(.tooManyRequests, "over \(limiter.perMinute) crashes a minute for this app; retry later",
                              retryAfter: retryAfter)
        }
        self.limiter = limiter
        self.appID = appID
    }

    /// The request kept a crash: the token stays spent.
    mutating func keep() {
        kept = true
    }

    deinit {
        if !kept { limiter.giveBack(appID) }
    }
}
