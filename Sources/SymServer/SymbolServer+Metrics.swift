import Metrics
import Prometheus

extension SymbolServer {
    /// The swift-metrics backend the executable bootstraps: swift-prometheus over `registry`,
    /// which `/metrics` renders.
    ///
    /// Names of other libraries are renamed where Prometheus' conventions require it (a counter
    /// ends in `_total`, a duration in `_seconds`); Hummingbird's `MetricsMiddleware` gives
    /// `hb_requests_total`, `hb_request_errors_total`, `http_server_request_duration_seconds`
    /// (a histogram) and `http_server_active_requests`. Label names have their dots replaced by
    /// swift-prometheus (`http.route` becomes `http_route`).
    public static func metricsFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (conventionalNames[name] ?? name, labels)
        }
        return factory
    }

    /// Hummingbird's metric names (`MetricsMiddleware`) as Prometheus spells such metrics.
    static let conventionalNames = [
        "hb.requests": "hb_requests_total",
        "hb.request.errors": "hb_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
    ]
}
