import Metrics

/// The server's own series in the registry.
struct ServerMetrics: Sendable {
    let registry: PrometheusRegistry

    func request(method: String, status: Int) {
        Counter(label: "crashsym_http_requests_total", dimensions: [("method", method), ("status", String(status))],
                factory: registry).increment()
    }

    func received(bytes: Int) {
        Counter(label: "crashsym_upload_bytes_total", factory: registry).increment(by: bytes)
    }

    func uploaded(stored: Int, alreadyPresent: Int) {
        Counter(label: "crashsym_uploads_total", factory: registry).increment()
        Counter(label: "crashsym_modules_stored_total", factory: registry).increment(by: stored)
        Counter(label: "crashsym_modules_already_present_total", factory: registry).increment(by: alreadyPresent)
    }

    func rejected(_ reason: String) {
        Counter(label: "crashsym_rejections_total", dimensions: [("reason", reason)], factory: registry).increment()
    }
}
