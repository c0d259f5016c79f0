#if canImport(Glibc)
import Glibc
#endif

/// What the agent says about the machine it runs on: host name, and OS, kernel and CPU from
/// uname(2).
public struct HostMetadata: Sendable {
    /// gethostname(2).
    public var hostName: String
    /// `sysname release machine`, e.g. `Linux 6.1.0-18-amd64 x86_64`.
    public var system: String

    /// The running machine's.
    public static let current: HostMetadata = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? string(buffer) : "unknown"
        var names = utsname()
        guard uname(&names) == 0 else { return HostMetadata(hostName: host, system: "unknown") }
        let fields = [
            withUnsafeBytes(of: names.sysname) { string($0) },
            withUnsafeBytes(of: names.release) { string($0) },
            withUnsafeBytes(of: names.machine) { string($0) },
        ]
        return HostMetadata(hostName: host.isEmpty ? "unknown" : host, system: fields.joined(separator: " "))
    }()

    private static func string(_ characters: [CChar]) -> String {
        characters.withUnsafeBytes { string($0) }
    }

    private static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
