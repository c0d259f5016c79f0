import FoundationEssentials
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import SymBytes

/// `--metrics-port`: the agent's counters as Prometheus text on `http://127.0.0.1:PORT/metrics`.
///
/// One thread blocked in accept(2), one short connection at a time: a scrape every few seconds
/// needs no event loop, and the agent links no SwiftNIO. The counters are those of `crashsym agent
/// status`, published by the collector when it writes its status (at most once a second).
public final class MetricsEndpoint: Sendable {
    /// The counters a scrape shows.
    public struct Snapshot: Sendable, Equatable {
        public var queueLength = 0
        public var queueBytes: UInt64 = 0
        public var delivered = 0
        public var rejected = 0
        public var dropped = 0
        public var suppressed = 0
        /// Seconds since 1970 of the last delivery (nil: none yet).
        public var lastSuccess: Double?
        /// No reports yet.
        public init() {}
    }

    private let socket: Int32
    /// The port listened on (the kernel's choice when 0 was asked).
    public let port: Int
    private let snapshot = Mutex(Snapshot())
    private let stopping = Atomic<Bool>(false)

    /// Listens on 127.0.0.1:`port`; fails (with what to do) when the port is taken.
    public init(port: Int) throws(AgentError) {
        guard (0...65535).contains(port) else { throw AgentError("metrics-port must be between 0 and 65535") }
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw AgentError("metrics: cannot create a socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)  // loopback only
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw AgentError("metrics: cannot listen on 127.0.0.1:\(port): \(reason) (give another --metrics-port)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        socket = descriptor
        self.port = Int(UInt16(bigEndian: actual.sin_port))
    }

    deinit { close(socket) }

    /// Replaces the counters a scrape shows.
    public func publish(_ counters: Snapshot) { snapshot.withLock { $0 = counters } }

    /// Serves scrapes on a thread of its own until `stop()`.
    public func start() {
        ConcurrentWork.detach { [self] in self.serve() }
    }

    /// Stops serving (the accept under way returns).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        shutdown(socket, Int32(SHUT_RDWR))
    }

    private func serve() {
        while !stopping.load(ordering: .acquiring) {
            let connection = accept(socket, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            answer(connection)
            close(connection)
        }
    }

    /// Reads one request (its head, at most 8 KiB, within 2 s) and answers it.
    private func answer(_ connection: Int32) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while request.count < 8192 {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            request += buffer[..<count]
            if request.count >= 4, request.suffix(4) == [13, 10, 13, 10] { break }
        }
        let line = request.prefix { $0 != 13 && $0 != 10 }.split(separator: 0x20)
        let response: String
        if line.count >= 2, line[0].elementsEqual("GET".utf8), line[1].elementsEqual("/metrics".utf8) {
            let body = Self.text(snapshot.withLock { $0 })
            response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        } else {
            let body = "only GET /metrics is served here\n"
            response = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        }
        let bytes = Array(response.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            sent += count
        }
    }

    /// The Prometheus text exposition (format 0.0.4) of `counters`.
    public static func text(_ counters: Snapshot) -> String {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        metric("crashsym_agent_queue_reports", "gauge", "Reports waiting in the queue.", "\(counters.queueLength)")
        metric("crashsym_agent_queue_bytes", "gauge", "Bytes of the queued reports.", "\(counters.queueBytes)")
        metric("crashsym_agent_delivered_total", "counter", "Reports the server stored (2xx).", "\(counters.delivered)")
        metric("crashsym_agent_rejected_total", "counter", "Reports the server refused for good, moved to rejected/.", "\(counters.rejected)")
        metric("crashsym_agent_dropped_total", "counter", "Reports dropped because the queue was over max-queue-mb.", "\(counters.dropped)")
        metric("crashsym_agent_suppressed_total", "counter", "Reports deleted by the crash-storm limit.", "\(counters.suppressed)")
        if let last = counters.lastSuccess {
            metric("crashsym_agent_last_success_timestamp_seconds", "gauge", "When a report was last delivered (seconds since 1970).",
                   seconds(last))
        }
        return text
    }

    /// `seconds` with three decimals.
    private static func seconds(_ value: Double) -> String {
        let milliseconds = Int64((value * 1000).rounded())
        let fraction = milliseconds % 1000
        return "\(milliseconds / 1000)." + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)"
    }
}
