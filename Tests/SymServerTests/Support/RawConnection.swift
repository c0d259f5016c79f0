import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to 127.0.0.1 driven byte by byte, for what curl will not do: trickle a header
/// (slowloris), or keep sending a body the server has refused.
final class RawConnection {
    private(set) var descriptor: Int32
    /// Bytes the server sent so far.
    private(set) var received = Data()
    /// Whether the server closed (end of stream or reset).
    private(set) var isClosed = false

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestFailure("connect: errno \(errno)")
        }
    }

    deinit {
        close(descriptor)
    }

    /// Sends what fits without waiting; returns the bytes sent (0 when the socket buffer is full
    /// or the connection is gone).
    @discardableResult
    func send(_ bytes: Data) -> Int {
        guard !isClosed else { return 0 }
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        if sent < 0 {
            if errno != EAGAIN && errno != EWOULDBLOCK { isClosed = true }
            return 0
        }
        return sent
    }

    /// Reads what has arrived, waiting up to `timeout` seconds for something (or the end).
    func receive(waiting timeout: Double) {
        guard !isClosed else { return }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if count > 0 {
            received.append(contentsOf: buffer[0..<count])
        } else if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
            isClosed = true
        }
    }

    /// Whether the socket can take more bytes now.
    var isWritable: Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&poller, 1, 0) > 0 && poller.revents & Int16(POLLOUT) != 0
    }

    var text: String { String(decoding: received, as: UTF8.self) }
}

/// What the kernel says about a running server process.
enum ProcessProbe {
    /// Bytes the process has read through system calls, sockets included (`rchar` of /proc/PID/io).
    static func bytesRead(_ pid: Int32) throws -> Int {
        try field("/proc/\(pid)/io", "rchar:")
    }

    /// Peak resident set size in KiB (`VmHWM`).
    static func peakResidentKiB(_ pid: Int32) throws -> Int {
        try field("/proc/\(pid)/status", "VmHWM:")
    }

    /// Open sockets of the process (listening and connected).
    static func openSockets(_ pid: Int32) throws -> Int {
        let directory = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0))?.hasPrefix("socket:") == true
        }.count
    }

    private static func field(_ path: String, _ name: String) throws -> Int {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
              let value = Int(line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") else {
            throw TestFailure("no \(name) in \(path)")
        }
        return value
    }
}
