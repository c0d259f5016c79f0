import Metrics
import Synchronization

/// The server's own series, created once through swift-metrics' global factory (which the
/// executable bootstraps with swift-prometheus) and kept here; series with labels are made on
/// their first use and kept too.
struct ServerMetrics: Sendable {
    let uploadBytes = Counter(label: "crashsym_upload_bytes_total")
    let uploads = Counter(label: "crashsym_uploads_total")
    let modulesStored = Counter(label: "crashsym_modules_stored_total")
    let modulesAlreadyPresent = Counter(label: "crashsym_modules_already_present_total")
    /// Connections accepted: with `crashsym_http_requests_total`, how well clients reuse them.
    let connections = Counter(label: "crashsym_http_connections_total")
    /// `crashsym_http_requests_total{method,status}`.
    let requests = CounterFamily(label: "crashsym_http_requests_total")
    /// `crashsym_rejections_total{reason}`.
    let rejections = CounterFamily(label: "crashsym_rejections_total")

    /// The documented reasons (docs/http-api.md), present on `/metrics` from the start at 0.
    static let rejectionReasons = [
        "unauthorized", "too-large", "too-many-requests", "timeout", "invalid-bundle", "incomplete-body", "header-timeout",
    ]

    init() {
        for reason in Self.rejectionReasons { _ = rejections.counter([("reason", reason)]) }
    }

    func request(method: String, status: Int) {
        requests.counter([("method", method), ("status", String(status))]).increment()
    }

    func accepted() {
        connections.increment()
    }

    func received(bytes: Int) {
        uploadBytes.increment(by: bytes)
    }

    func uploaded(stored: Int, alreadyPresent: Int) {
        uploads.increment()
        modulesStored.increment(by: stored)
        modulesAlreadyPresent.increment(by: alreadyPresent)
    }

    func rejected(_ reason: String) {
        rejections.counter([("reason", reason)]).increment()
    }
}

/// The counters of one name, one per label set, each created once.
final class CounterFamily: Sendable {
    let label: String
    private let counters = Mutex<[[String]: Counter]>([:])

    init(label: String) {
        self.label = label
    }

    /// The counter of these labels (names and values, in a fixed order).
    func counter(_ dimensions: [(String, String)]) -> Counter {
        let key = dimensions.flatMap { [$0.0, $0.1] }
        return counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(label: label, dimensions: dimensions)
            counters[key] = counter
            return counter
        }
    }
}
