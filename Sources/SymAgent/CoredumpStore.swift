import SymBytes
import SymCore
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// systemd-coredump's store (`--systemd-coredump`, `coredumpctl`'s location,
/// `/var/lib/systemd/coredump` by default): each complete `core.COMM.UID.BOOTID.PID.TIME[.zst|.xz]`
/// becomes the same compact report as a piped core (`CoreSpool.reportJSON(stream:…)`), the core
/// decompressed as it is read (zstd, xz; uncompressed cores too), never whole in memory.
///
/// The store is systemd's: its files are never moved or removed (systemd's own vacuuming does
/// that). Which cores were sent is remembered in `STATE/coredump-done` (one name a line, appended
/// and synced once the report is in the queue; names whose core is gone are forgotten at start). A
/// stop between the queue and that line takes the core again: its report has the same bytes, so
/// the same `Idempotency-Key`, and the server stores it once.
final class CoredumpStore {
    /// systemd-coredump's `Storage=external` directory.
    static let defaultDirectory = "/var/lib/systemd/coredump"

    /// What a stored core's name says (systemd's `coredump.c`: `core.%s.%s.%s.%s.%s`, COMM with
    /// `.`, `/`, space and backslash escaped as `\xNN`; TIME in microseconds).
    struct Name: Equatable {
        var command: String
        var uid: UInt32
        var bootID: String
        var pid: Int32
        var microseconds: UInt64
        var compression: Compression?

        enum Compression: String {
            case zstd = "zst"
            case xz
        }

        init?(fileName: String) {
            let fields = fileName.split(separator: ".", omittingEmptySubsequences: false)
            guard fields.count == 6 || fields.count == 7, fields[0] == "core", !fields[1].isEmpty,
                  let uid = UInt32(fields[2]), fields[3].count == 32, fields[3].allSatisfy(\.isHexDigit),
                  let pid = Int32(fields[4]), pid > 0, let time = UInt64(fields[5]) else { return nil }
            if fields.count == 7 {
                // .lz4 (liblz4's headers are not installed here) is not read: left for coredumpctl.
                guard let compression = Compression(rawValue: String(fields[6])) else { return nil }
                self.compression = compression
            } else {
                compression = nil
            }
            command = Self.unescape(fields[1])
            self.uid = uid
            bootID = String(fields[3])
            self.pid = pid
            microseconds = time
        }

        /// `\xNN` sequences decoded.
        static func unescape(_ text: Substring) -> String {
            var bytes: [UInt8] = []
            var utf8 = Array(text.utf8)[...]
            while let first = utf8.first {
                if first == 0x5c, utf8.count >= 4, utf8[utf8.startIndex + 1] == 0x78,
                   let value = UInt8(String(decoding: utf8[(utf8.startIndex + 2)..<(utf8.startIndex + 4)], as: UTF8.self), radix: 16) {
                    bytes.append(value)
                    utf8 = utf8.dropFirst(4)
                } else {
                    bytes.append(first)
                    utf8 = utf8.dropFirst()
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    let directory: String
    private let doneFile: String
    private var done: Set<String> = []

    /// The store at `directory`, what was sent of it remembered under `stateDirectory`.
    init(directory: String, stateDirectory: String) {
        self.directory = directory
        doneFile = stateDirectory + "/coredump-done"
        let text = CrashedProcess.readFile(doneFile, limit: 64 << 20).map { String(decoding: $0, as: UTF8.self) } ?? ""
        // Only the names still in the store: the file does not grow past the store.
        done = Set(text.split(separator: "\n").map(String.init).filter { access(directory + "/" + $0, F_OK) == 0 })
        var lines = done.sorted().joined(separator: "\n")
        if !lines.isEmpty { lines += "\n" }
        _ = FileIO.writeDurably(Array(lines.utf8), to: doneFile, scratch: doneFile + ".partial")
    }

    /// Whether `fileName` is a complete stored core not sent yet.
    func wants(_ fileName: String) -> Bool {
        Name(fileName: fileName) != nil && !done.contains(fileName)
    }

    /// Remembers that the reports of `names` are queued (appended, then synced).
    func markDone(_ names: [String]) {
        guard !names.isEmpty else { return }
        done.formUnion(names)
        let descriptor = open(doneFile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let text = Array(names.map { $0 + "\n" }.joined().utf8)
        _ = text.withUnsafeBytes { FileIO.writeAll(descriptor, $0) }
        _ = fsync(descriptor)
    }

    /// The compact report of the stored core `fileName`, walked by `symbolicator`, within `limits`.
    func reportJSON(of fileName: String, symbolicator: Symbolicator, limits: StreamedCore.Limits = StreamedCore.Limits()) -> [UInt8] {
        let name = Name(fileName: fileName)
        let crash = CoreCapture.Crash(pid: name?.pid ?? 0, tid: nil, signal: 0, time: Int64((name?.microseconds ?? 0) / 1_000_000),
                                      executable: name?.command ?? "unknown")
        let extra: [(String, String)] = name.map { [("uid", "\($0.uid)"), ("boot_id", $0.bootID), ("core_file", fileName)] } ?? []
        let descriptor = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return CoreSpool.recordJSON(crash: crash, truncated: false,
                                        problem: "the core could not be read: \(String(cString: strerror(errno)))",
                                        input: .systemdCoredump, extra: extra)
        }
        defer { close(descriptor) }
        let source: (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int
        switch name?.compression {
        case .zstd?:
            do {
                let zstd = try CoreStreamSource.Zstd(descriptor: descriptor)
                source = { (buffer) throws(FormatError) -> Int in try zstd.read(into: buffer) }
            } catch {
                return CoreSpool.recordJSON(crash: crash, truncated: false, problem: "the core could not be read: \(error)",
                                            input: .systemdCoredump, extra: extra)
            }
        case .xz?:
            do {
                let xz = try CoreStreamSource.XZ(descriptor: descriptor)
                source = { (buffer) throws(FormatError) -> Int in try xz.read(into: buffer) }
            } catch {
                return CoreSpool.recordJSON(crash: crash, truncated: false, problem: "the core could not be read: \(error)",
                                            input: .systemdCoredump, extra: extra)
            }
        case nil:
            source = CoreStreamSource.reader(descriptor)
        }
        return CoreSpool.reportJSON(stream: source, crash: crash, input: .systemdCoredump, process: nil, limits: limits,
                                    readToEnd: false, symbolicator: symbolicator, extra: extra)
    }
}
