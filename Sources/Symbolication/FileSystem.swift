#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymBytes

/// The few file-system operations the symbolication layer needs, on the C library directly: the
/// `crashsym` process then loads no Foundation (and no ICU), which keeps a one-address lookup in a
/// fresh process within a few milliseconds.
public enum FileSystem {
    /// What a path is.
    public enum Kind: Sendable {
        case file, directory, other, missing
    }

    /// The kind of `path`, following symbolic links.
    public static func kind(of path: String) -> Kind {
        var status = stat()
        guard stat(path, &status) == 0 else { return .missing }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// Whether `path` is a symbolic link.
    static func isSymbolicLink(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK
    }

    /// Regular files under `directory`, recursively, in sorted order; symbolic links to
    /// directories are not followed (no cycles).
    public static func files(under directory: String) -> [String] {
        var result: [String] = []
        var pending = [directory]
        while let folder = pending.popLast() {
            guard let handle = opendir(folder) else { continue }
            // Names with the type readdir gives (no stat per file when it is given: a directory
            // of 10,000 reports is listed before any is read).
            var names: [(name: String, type: UInt8)] = []
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name == "." || name == ".." { continue }
                names.append((name, entry.pointee.d_type))
            }
            closedir(handle)
            var subfolders: [String] = []
            for (name, type) in names.sorted(by: { $0.name < $1.name }) {
                let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
                if type == UInt8(DT_REG) {
                    result.append(path)
                    continue
                }
                if type == UInt8(DT_DIR) {
                    subfolders.append(path)
                    continue
                }
                // A symbolic link, or a file system that does not give the type.
                switch kind(of: path) {
                case .file: result.append(path)
                case .directory where !isSymbolicLink(path): subfolders.append(path)
                default: break
                }
            }
            pending.append(contentsOf: subfolders.reversed())
        }
        return result
    }

    /// The first `count` bytes of a file (fewer when it is shorter); nil when it cannot be read.
    public static func prefix(of path: String, count: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, count) }
        guard read >= 0 else { return nil }
        return Array(bytes.prefix(read))
    }

    /// Creates `path` and its missing parents.
    public static func createDirectory(_ path: String) throws(FormatError) {
        if kind(of: path) == .directory { return }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw FormatError(.io, "cannot create directory: \(String(cString: strerror(errno)))", path: prefix)
            }
        }
        guard kind(of: path) == .directory else {
            throw FormatError(.io, "not a directory", path: path)
        }
    }

    /// Writes `bytes` to a temporary file beside `path`, flushes it to disk, then renames it over
    /// `path` (`FileIO.writeDurably`): readers see the old file or the whole new one, never half
    /// of it. A directory that cannot be flushed leaves the file in place, not an error.
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(FormatError) {
        let temporary = path + ".tmp-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        guard let failure = FileIO.writeDurably(bytes, to: path, scratch: temporary, exclusive: true) else { return }
        let reason = String(cString: strerror(failure.code))
        switch failure.step {
        case .syncDirectory: return
        case .create: throw FormatError(.io, "cannot create: \(reason)", path: temporary)
        default: throw FormatError(.io, "cannot write: \(reason)", path: path)
        }
    }

    /// The working directory; nil when it cannot be read.
    public static var currentDirectory: String? {
        guard let path = getcwd(nil, 0) else { return nil }
        defer { free(path) }
        return String(cString: path)
    }

    /// Number of online processors.
    public static var processorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
