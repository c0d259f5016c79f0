import FoundationEssentials
import CSyncfs
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// The agent's durable queue on disk (docs/agent.md, "Queue layout"):
///
/// ```
/// STATE/lock                     flock: one agent per state directory
/// STATE/queue/ID.meta            where the report goes (app, version, environment, format), made durable first
/// STATE/queue/ID.report          the crash file, renamed here from its spool (same filesystem), then made durable
/// STATE/rejected/ID.report       refused by the server (4xx other than 408/429) …
/// STATE/rejected/ID.answer.json  … with the server's answer
/// STATE/tmp/                     scratch files (emptied at start)
/// ```
///
/// IDs sort in the order reports were taken (nanoseconds since 1970, then the process and a
/// counter). An entry exists once its `.report` is in `queue/`; a `.meta` without it (a crash
/// between the two steps) is removed at start, and its file is still in the spool.
public final class ReportQueue {
    /// Where a queued report goes.
    public struct Metadata: Codable, Sendable, Equatable {
        public var appID: String
        public var version: String?
        public var environment: String?
        public var format: String?
        /// The spool file it was taken from (for logs).
        public var source: String

        /// Metadata of one report.
        public init(appID: String, version: String?, environment: String?, format: String?, source: String) {
            self.appID = appID
            self.version = version
            self.environment = environment
            self.format = format
            self.source = source
        }
    }

    /// A failure of the queue's own files: the message names the path and the reason.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ description: String) { self.description = description }
        init(_ what: String, _ path: String, _ code: Int32) {
            description = "\(path): \(what): \(String(cString: strerror(code)))"
        }
    }

    public let directory: String
    let queueDirectory: String
    let rejectedDirectory: String
    let scratchDirectory: String
    private let lockDescriptor: Int32
    private var counter: UInt64 = 0
    /// Bytes of the `.report` files in the queue.
    public private(set) var totalBytes: UInt64 = 0

    /// Opens (and creates) the state directory, takes its lock and clears what a crash left
    /// half-done. Fails when another agent holds the lock.
    public init(directory: String) throws(Failure) {
        self.directory = directory
        queueDirectory = directory + "/queue"
        rejectedDirectory = directory + "/rejected"
        scratchDirectory = directory + "/tmp"
        for path in [directory, queueDirectory, rejectedDirectory, scratchDirectory] {
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw Failure("cannot create the directory", path, errno)
            }
        }
        let lockPath = directory + "/lock"
        lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw Failure("cannot open", lockPath, errno) }
        guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(lockDescriptor)
            if code == EWOULDBLOCK {
                throw Failure("\(directory): another crashsym agent uses this state directory (give each agent its own --state-dir)")
            }
            throw Failure("cannot lock", lockPath, code)
        }
        for name in Self.names(in: scratchDirectory) { unlink(scratchDirectory + "/" + name) }
        let names = Self.names(in: queueDirectory)
        let reports = Set(names.filter { $0.hasSuffix(".report") }.map { String($0.dropLast(7)) })
        for name in names where name.hasSuffix(".meta") && !reports.contains(String(name.dropLast(5))) {
            unlink(queueDirectory + "/" + name)
        }
        for id in reports { totalBytes += size(of: reportPath(id)) }
    }

    deinit {
        close(lockDescriptor)
    }

    /// The queued report IDs, oldest first.
    public func entries() -> [String] {
        Self.names(in: queueDirectory).filter { $0.hasSuffix(".report") }.map { String($0.dropLast(7)) }.sorted()
    }

    /// The path of a queued report.
    public func reportPath(_ id: String) -> String { "\(queueDirectory)/\(id).report" }

    /// The metadata of a queued report (nil when its `.meta` is unreadable: the caller uses defaults).
    public func metadata(_ id: String) -> Metadata? {
        guard let data = FileManager.default.contents(atPath: "\(queueDirectory)/\(id).meta") else { return nil }
        return try? JSONDecoder().decode(Metadata.self, from: data)
    }

    /// Moves complete spool files into the queue, durably, as one batch: the metadata of each
    /// first, made durable together (syncfs(2)), then each file (rename within one filesystem, else
    /// a copy), made durable together, and only then are copied sources removed. One sync per
    /// step, whatever the batch's size, instead of one fsync per file. Returns each file's new ID
    /// (nil for a file that vanished before it could be taken).
    public func take(_ files: [(path: String, metadata: Metadata)]) throws(Failure) -> [String?] {
        guard !files.isEmpty else { return [] }
        let encoder = JSONEncoder()
        var ids: [String?] = []
        for file in files {
            let id = nextID()
            let metaPath = "\(queueDirectory)/\(id).meta"
            let encoded: Data
            do {
                encoded = try encoder.encode(file.metadata)
            } catch {
                throw Failure("cannot encode the metadata of \(file.path): \(error)")
            }
            let descriptor = open(metaPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw Failure("cannot create", metaPath, errno) }
            let error = Array(encoded).withUnsafeBytes { FileIO.writeAll(descriptor, $0) }
            close(descriptor)
            guard error == 0 else { throw Failure("cannot write", metaPath, error) }
            ids.append(id)
        }
        try syncQueue()
        var copied: [String] = []
        for (index, file) in files.enumerated() {
            guard let id = ids[index] else { continue }
            let destination = reportPath(id)
            var error: Int32 = rename(file.path, destination) == 0 ? 0 : errno
            if error == EXDEV {
                error = copy(file.path, to: destination, id: id)
                if error == 0 { copied.append(file.path) }
            }
            if error != 0 {
                unlink("\(queueDirectory)/\(id).meta")
                ids[index] = nil
                // Gone (another process took it, or its writer removed it): nothing to queue.
                if error == ENOENT { continue }
                throw Failure("cannot move \(file.path) into the queue", destination, error)
            }
            totalBytes += size(of: destination)
        }
        try syncQueue()
        for path in copied { unlink(path) }
        return ids
    }

    /// syncfs(2) of the queue's filesystem: every file written or renamed there is on disk.
    private func syncQueue() throws(Failure) {
        let descriptor = open(queueDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure("cannot open", queueDirectory, errno) }
        defer { close(descriptor) }
        guard syncfs(descriptor) == 0 else { throw Failure("cannot flush to disk", queueDirectory, errno) }
    }

    /// Removes a delivered report.
    public func remove(_ id: String) {
        let path = reportPath(id)
        let bytes = size(of: path)
        if unlink(path) == 0 { totalBytes -= min(totalBytes, bytes) }
        unlink("\(queueDirectory)/\(id).meta")
    }

    /// Moves a refused report to `rejected/`, with the server's answer beside it.
    public func reject(_ id: String, answer: [UInt8]) throws(Failure) {
        let answerPath = "\(rejectedDirectory)/\(id).answer.json"
        let error = FileIO.writeDurably(answer, to: answerPath, scratch: "\(scratchDirectory)/\(id).answer")
        guard error == 0 else { throw Failure("cannot write", answerPath, error) }
        let path = reportPath(id)
        let bytes = size(of: path)
        let moved = FileIO.durablyRename(path, to: "\(rejectedDirectory)/\(id).report")
        guard moved == 0 else { throw Failure("cannot move to rejected/", path, moved) }
        totalBytes -= min(totalBytes, bytes)
        unlink("\(queueDirectory)/\(id).meta")
    }

    /// Drops the oldest reports (but not those in `keeping`: being sent) until the queue holds at
    /// most `maximumBytes`; returns the IDs dropped.
    public func dropOldest(toFit maximumBytes: UInt64, keeping: Set<String> = []) -> [String] {
        guard totalBytes > maximumBytes else { return [] }
        var dropped: [String] = []
        for id in entries() where !keeping.contains(id) {
            guard totalBytes > maximumBytes else { break }
            remove(id)
            dropped.append(id)
        }
        return dropped
    }

    /// Reports in `rejected/`.
    public func rejectedCount() -> Int {
        Self.names(in: rejectedDirectory).filter { $0.hasSuffix(".report") }.count
    }

    private func nextID() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        counter += 1
        let nanoseconds = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        let time = String(nanoseconds)
        let counterText = String(counter)
        return String(repeating: "0", count: max(0, 20 - time.count)) + time + "-\(getpid())-"
            + String(repeating: "0", count: max(0, 8 - counterText.count)) + counterText
    }

    /// Copies `source` into the queue through a scratch file (a spool on another filesystem); the
    /// caller syncs the batch.
    private func copy(_ source: String, to destination: String, id: String) -> Int32 {
        let scratch = "\(scratchDirectory)/\(id).copy"
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return errno }
        defer { close(input) }
        let output = open(scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard output >= 0 else { return errno }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var failure: Int32 = 0
        while failure == 0 {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            if count == 0 { break }
            failure = buffer.withUnsafeBytes { FileIO.writeAll(output, UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        close(output)
        if failure == 0 && rename(scratch, destination) != 0 { failure = errno }
        if failure != 0 { unlink(scratch) }
        return failure
    }

    func size(of path: String) -> UInt64 {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
    }

    /// The entries of `directory` (not `.` and `..`); empty when it cannot be read.
    static func names(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
