import Foundation
import Metrics
import Synchronization

/// A swift-metrics backend that keeps every series in memory and renders the Prometheus text
/// format (version 0.0.4) for `/metrics`: counters as `counter`, recorders as `gauge` (last value),
/// timers as `summary` (sum in seconds and count, no quantiles).
public final class PrometheusRegistry: MetricsFactory, Sendable {
    private let series = Mutex<[SeriesKey: Series]>([:])

    /// Creates an empty registry.
    public init() {}

    private struct SeriesKey: Hashable {
        var name: String
        var labels: String
    }

    private enum Series {
        case counter(Counter)
        case gauge(Gauge)
        case summary(Summary)

        var type: String {
            switch self {
            case .counter: "counter"
            case .gauge: "gauge"
            case .summary: "summary"
            }
        }
    }

    final class Counter: CounterHandler, Sendable {
        let value = Atomic<Int64>(0)
        func increment(by amount: Int64) { value.wrappingAdd(amount, ordering: .relaxed) }
        func reset() { value.store(0, ordering: .relaxed) }
    }

    final class Gauge: RecorderHandler, Sendable {
        let value = Mutex<Double>(0)
        func record(_ value: Int64) { record(Double(value)) }
        func record(_ value: Double) { self.value.withLock { $0 = value } }
    }

    final class Summary: TimerHandler, Sendable {
        let state = Mutex<(sum: Int64, count: Int64)>((0, 0))
        func recordNanoseconds(_ duration: Int64) {
            state.withLock { $0.sum &+= duration; $0.count &+= 1 }
        }
    }

    private func make<Handler>(_ label: String, _ dimensions: [(String, String)], create: () -> Series,
                               extract: (Series) -> Handler?) -> Handler {
        let key = SeriesKey(name: Self.sanitize(label), labels: Self.labels(dimensions))
        return series.withLock { series in
            if let existing = series[key], let handler = extract(existing) { return handler }
            let made = create()
            series[key] = made
            return extract(made)!
        }
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        make(label, dimensions, create: { .counter(Counter()) }, extract: { if case .counter(let c) = $0 { c } else { nil } })
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        make(label, dimensions, create: { .gauge(Gauge()) }, extract: { if case .gauge(let g) = $0 { g } else { nil } })
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        make(label, dimensions, create: { .summary(Summary()) }, extract: { if case .summary(let s) = $0 { s } else { nil } })
    }

    public func destroyCounter(_ handler: CounterHandler) {}
    public func destroyRecorder(_ handler: RecorderHandler) {}
    public func destroyTimer(_ handler: TimerHandler) {}

    /// The Prometheus text exposition of every series, sorted by name.
    public func render() -> String {
        let snapshot = series.withLock { $0 }
        var text = ""
        var lastName = ""
        for (key, series) in snapshot.sorted(by: { ($0.key.name, $0.key.labels) < ($1.key.name, $1.key.labels) }) {
            if key.name != lastName {
                text += "# TYPE \(key.name) \(series.type)\n"
                lastName = key.name
            }
            let labels = key.labels.isEmpty ? "" : "{\(key.labels)}"
            switch series {
            case .counter(let counter):
                text += "\(key.name)\(labels) \(counter.value.load(ordering: .relaxed))\n"
            case .gauge(let gauge):
                text += "\(key.name)\(labels) \(gauge.value.withLock { $0 })\n"
            case .summary(let summary):
                let (sum, count) = summary.state.withLock { $0 }
                text += "\(key.name)_sum\(labels) \(Double(sum) / 1e9)\n\(key.name)_count\(labels) \(count)\n"
            }
        }
        return text
    }

    /// A metric name restricted to `[a-zA-Z0-9_:]`.
    private static func sanitize(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") ? $0 : "_" })
    }

    private static func labels(_ dimensions: [(String, String)]) -> String {
        dimensions.sorted { $0.0 < $1.0 }.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(sanitize(name))=\"\(escaped)\""
        }.joined(separator: ",")
    }
}
