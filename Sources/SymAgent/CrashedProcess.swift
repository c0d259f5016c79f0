import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// What `/proc/PID` says of a crashed process while the kernel waits on the `core_pattern`
/// helper (core(5): the process's directory stays readable until the helper has read the core):
/// its command line and the environment variables an allow-list admits. Read as root, before
/// the helper drops its privileges (`environ` is readable by its owner and root only).
public struct CrashedProcess: Sendable, Equatable {
    /// `cmdline`'s arguments.
    public var arguments: [String]
    /// The admitted variables, in the process's order.
    public var environment: [(name: String, value: String)]

    /// The variables kept by default: locale and time zone, nothing that may hold a secret.
    public static let defaultAllowList = ["LANG", "LANGUAGE", "LC_*", "TZ"]
    /// Most bytes of `cmdline` and of `environ` read.
    static let maximumBytes = 1 << 18
    /// Most bytes of the command line and of one value kept in the report.
    static let maximumTextBytes = 4096

    /// A process's details.
    public init(arguments: [String], environment: [(name: String, value: String)]) {
        self.arguments = arguments
        self.environment = environment
    }

    public static func == (lhs: CrashedProcess, rhs: CrashedProcess) -> Bool {
        lhs.arguments == rhs.arguments && lhs.environment.elementsEqual(rhs.environment) { $0 == $1 }
    }

    /// Reads `/proc/PID` (`procRoot` for tests); nil when the process is gone or unreadable.
    public static func read(pid: Int32, allow: [String], procRoot: String = "/proc") -> CrashedProcess? {
        guard let cmdline = readFile("\(procRoot)/\(pid)/cmdline") else { return nil }
        let environ = readFile("\(procRoot)/\(pid)/environ") ?? []
        return CrashedProcess(cmdline: cmdline, environ: environ, allow: allow)
    }

    /// The details of the NUL-separated `cmdline` and `environ`, the environment filtered by `allow`.
    public init(cmdline: [UInt8], environ: [UInt8], allow: [String]) {
        arguments = cmdline.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        if arguments.last == "" { arguments.removeLast() }
        environment = []
        for entry in environ.split(separator: 0) {
            guard let equals = entry.firstIndex(of: 0x3d), equals > entry.startIndex else { continue }
            let name = String(decoding: entry[entry.startIndex..<equals], as: UTF8.self)
            guard Self.admits(name, allow) else { continue }
            environment.append((name, String(decoding: entry[(equals + 1)...].prefix(Self.maximumTextBytes), as: UTF8.self)))
        }
    }

    /// Whether `name` is on the allow-list: an exact name, or a glob (`*` any run of
    /// characters) that does not admit names that look like secrets (`*KEY*`, `*TOKEN*`,
    /// `*SECRET*`, `*PASS*`, `*CREDENTIAL*`, `*AUTH*`): those only by their exact name.
    public static func admits(_ name: String, _ allow: [String]) -> Bool {
        if allow.contains(name) { return true }
        let upper = name.uppercased()
        if ["KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "AUTH", "COOKIE"].contains(where: { upper.contains($0) }) { return false }
        return allow.contains { $0.contains("*") && glob($0, matches: name) }
    }

    /// `*` matches any run of characters (linear: the classic two-pointer match with backtracking
    /// to the last star only).
    static func glob(_ pattern: String, matches name: String) -> Bool {
        let pattern = Array(pattern.utf8), name = Array(name.utf8)
        var p = 0, n = 0, star = -1, mark = 0
        while n < name.count {
            if p < pattern.count && pattern[p] != 0x2a && pattern[p] == name[n] {
                p += 1
                n += 1
            } else if p < pattern.count && pattern[p] == 0x2a {
                star = p
                mark = n
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                n = mark
            } else {
                return false
            }
        }
        while p < pattern.count && pattern[p] == 0x2a { p += 1 }
        return p == pattern.count
    }

    /// The command line as a shell would read it back (arguments with spaces or quotes quoted),
    /// at most `maximumTextBytes`.
    public var commandLine: String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%".unicodeScalars)
        let text = arguments.map { argument in
            !argument.isEmpty && argument.unicodeScalars.allSatisfy(safe.contains) ? argument
                : "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
        return String(decoding: text.utf8.prefix(Self.maximumTextBytes), as: UTF8.self)
    }

    /// The report's metadata entries: `command_line`, then `env.NAME` per admitted variable.
    public var metadata: [(String, String)] {
        [("command_line", commandLine)] + environment.map { ("env." + $0.name, $0.value) }
    }

    /// Up to `limit` bytes of a file (`/proc` files' sizes read as 0: read until the end).
    static func readFile(_ path: String, limit: Int = maximumBytes) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < limit {
            let got = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, min($0.count, limit - bytes.count)) }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { return bytes.isEmpty ? nil : bytes }
            if got == 0 { break }
            bytes += chunk.prefix(got)
        }
        return bytes
    }
}

extension String {
    /// Every `target` replaced by `replacement` (FoundationEssentials-free).
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
