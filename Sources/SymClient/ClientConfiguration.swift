#if canImport(Glibc)
import Glibc
#endif
import SymHTTP

/// Settings of a `SymbolClient`. HTTPS certificates and proxies are left to libcurl, which reads
/// `https_proxy`, `http_proxy`, `no_proxy` (and `CURL_CA_BUNDLE`) from the environment.
public struct ClientConfiguration: Sendable {
    /// Base URL of the server (`http://127.0.0.1:8080`), without a trailing `/api/v1`.
    public var server: String
    /// Application id.
    public var appID: String
    /// Application key, sent as `Authorization: Bearer`; never logged or printed.
    public var appKey: String
    /// `User-Agent` header.
    public var userAgent: String
    /// Retries of connection errors, 429 and 5xx.
    public var retry: RetryPolicy
    /// Every request, retries and waits included, must end by this instant.
    public var deadline: ContinuousClock.Instant
    /// Time allowed to establish a connection, per attempt.
    public var connectTimeout: Duration
    /// An attempt moving less than one byte per second for this long is abandoned (and retried).
    public var stallTimeout: Duration
    /// How the client waits between attempts (injected so tests can observe the waits).
    public var sleep: @Sendable (Duration) -> Void

    /// Creates a configuration; the deadline defaults to one hour from now.
    public init(server: String, appID: String, appKey: String, userAgent: String = "crashsym",
                retry: RetryPolicy = RetryPolicy(), deadline: ContinuousClock.Instant = .now + .seconds(3600),
                connectTimeout: Duration = .seconds(10), stallTimeout: Duration = .seconds(60),
                sleep: @escaping @Sendable (Duration) -> Void = ClientConfiguration.threadSleep) {
        self.server = server
        self.appID = appID
        self.appKey = appKey
        self.userAgent = userAgent
        self.retry = retry
        self.deadline = deadline
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.sleep = sleep
    }

    /// `url` with the password of its user information replaced by `***` (`HTTPRequest.redacting`).
    public static func redacting(_ url: String) -> String { HTTPRequest.redacting(url) }

    /// Blocks the calling thread for `duration`.
    public static let threadSleep: @Sendable (Duration) -> Void = { duration in
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || attoseconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

