#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymBytes
import SymELF
import SymReport

/// Finds the separate debug file of a stripped binary, the way gdb and elfutils do: by build-id
/// under `.build-id/xx/rest.debug`, then by `.gnu_debuglink` next to the binary, in its `.debug/`
/// folder and under each debug directory (the binary's whole directory, then each trailing part of
/// it, deepest first, then the directory itself). A candidate is used only when its build-id (or, without
/// build-ids, the debuglink CRC) matches.
public struct DebugFileLocator: Sendable {
    /// Directories searched, in order (each may hold a `.build-id/` tree or be one).
    public var debugDirectories: [String]

    /// debuginfod servers asked for a debug file no directory has (nil: none).
    public var debuginfod: DebuginfodProvider.Configuration?

    /// The system's default debug directory.
    public static let systemDirectory = "/usr/lib/debug"

    /// Creates a locator searching `debugDirectories` and then `/usr/lib/debug`.
    public init(debugDirectories: [String] = [], includeSystemDirectory: Bool = true) {
        var directories = debugDirectories
        if includeSystemDirectory && !directories.contains(Self.systemDirectory) {
            directories.append(Self.systemDirectory)
        }
        self.debugDirectories = directories
    }

    /// Every path tried for `binary`, in order (for `--explain`-style diagnostics and tests).
    public func candidates(for binary: ELFFile) -> [String] {
        var paths: [String] = []
        if let buildID = binary.buildID, buildID.count > 1 {
            let hex = hexString(buildID)
            let head = String(hex.prefix(2)), rest = String(hex.dropFirst(2))
            for directory in debugDirectories {
                paths.append("\(directory)/.build-id/\(head)/\(rest).debug")
                if directory.hasSuffix(".build-id") { paths.append("\(directory)/\(head)/\(rest).debug") }
            }
        }
        if let link = binary.debugLink, !link.fileName.isEmpty, !link.fileName.contains("/") || link.fileName.hasPrefix("/") {
            let folder = Self.directory(of: binary.path)
            paths.append("\(folder)/\(link.fileName)")
            paths.append("\(folder)/.debug/\(link.fileName)")
            // elfutils (`dwfl_standard_find_debuginfo`) also tries each trailing part of the
            // binary's directory, deepest first: for /x/bindir/bin/app, DIR/x/bindir/bin/,
            // DIR/bindir/bin/, DIR/bin/; a debug tree that mirrors only the end of the path
            // still answers. `locate` checks the build-id (or the CRC) of whatever is found.
            let absolute = folder.hasPrefix("/") ? folder : Self.realPath(folder)
            let components = absolute.split(separator: "/")
            for directory in debugDirectories {
                paths.append("\(directory)\(folder.hasPrefix("/") ? "" : "/")\(folder)/\(link.fileName)")
                for dropped in 0..<components.count {
                    let path = "\(directory)/\(components.dropFirst(dropped).joined(separator: "/"))/\(link.fileName)"
                    if !paths.contains(path) { paths.append(path) }
                }
                paths.append("\(directory)/\(link.fileName)")
            }
        }
        return paths
    }

    /// The separate debug file of `binary`, or nil when none matches.
    public func locate(for binary: ELFFile) -> ELFFile? {
        let ownPath = Self.realPath(binary.path)
        for path in candidates(for: binary) {
            guard access(path, R_OK) == 0, Self.realPath(path) != ownPath,
                  let candidate = try? ELFFile(path: path) else { continue }
            if matches(candidate, binary) { return candidate }
        }
        if let debuginfod, let id = binary.buildIDHex,
           let fetched = DebuginfodProvider(configuration: debuginfod).debugFile(
               buildID: id, name: ReportModule.fileName(of: binary.path), path: binary.path),
           matches(fetched, binary) {
            return fetched
        }
        return nil
    }

    /// Whether `candidate` is the debug file of `binary`.
    public func matches(_ candidate: ELFFile, _ binary: ELFFile) -> Bool {
        if let expected = binary.buildID, !expected.isEmpty {
            return candidate.buildID == expected
        }
        guard let link = binary.debugLink, let file = try? MappedFile(path: candidate.path) else { return false }
        return gnuDebuglinkCRC32(file.bytes) == link.crc
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }

    static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

