#if canImport(Glibc)
import Glibc
#endif

/// A command run to completion in a child process, with what only its parent sees: its peak
/// resident memory (`wait4`'s `ru_maxrss`), for tests that bound memory without timing.
///
/// The child is started by a small Python process, not by the test process: Linux carries the
/// peak RSS of the address space a process `exec`s from into its own peak (`posix_spawn` uses
/// the parent's), so a child of this large test process would report the test's own peak.
struct ChildRun {
    let status: Int32
    let standardError: String
    /// Peak resident set size in KiB.
    let maximumResidentKiB: Int

    /// Runs `executable` with `arguments` (standard output and error to files in `scratch`),
    /// under an address-space limit (`RLIMIT_AS`, KiB) when one is given.
    init(_ executable: String, _ arguments: [String], scratch: TemporaryDirectory,
         addressSpaceLimitKiB: Int? = nil) throws {
        let errorPath = scratch.file("child-stderr")
        let argv = ([executable] + arguments).map { "'" + $0.replacing("'", with: "\\'") + "'" }.joined(separator: ", ")
        let limit = addressSpaceLimitKiB.map { "resource.setrlimit(resource.RLIMIT_AS, (\($0 * 1024), \($0 * 1024)))" } ?? ""
        let script = """
            import os, resource
            \(limit)
            out = os.open('\(scratch.file("child-stdout"))', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            err = os.open('\(errorPath)', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            argv = [\(argv)]
            pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, err, 2)])
            _, status, usage = os.wait4(pid, 0)
            print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
            """
        let scriptPath = scratch.file("child.py")
        try writeBytes(Array(script.utf8), to: scriptPath)
        let fields = try Shell.run("python3 \(Shell.quote(scriptPath))").split(separator: " ")
        guard fields.count == 2, let status = Int32(fields[0]),
              let resident = Int(fields[1].filter { !$0.isWhitespace }) else {
            throw CommandError(command: "python3 \(scriptPath)", status: -1, output: "unexpected output \(fields)")
        }
        // A negative exit code is a signal.
        self.status = status < 0 ? 128 - status : status
        standardError = String(decoding: try readBytes(errorPath), as: UTF8.self)
        maximumResidentKiB = resident
    }
}

/// The built `crashsym` executable (`CRASHSYM_BINARY`, else `.build/debug/crashsym` of this
/// checkout), as the server and CLI tests find it.
var crashsymExecutable: String {
    if let path = getenv("CRASHSYM_BINARY") { return String(cString: path) }
    var root = "\(#filePath)"
    for _ in 0..<4 { root = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)]) }
    return root + "/.build/debug/crashsym"
}
