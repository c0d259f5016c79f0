import Foundation
import TestSupport

/// Why an external demangler could not be run.
struct ToolError: Error, CustomStringConvertible, Sendable {
    var description: String
}

/// An independent demangler run as a separate process: names in on stdin, one demangled line out
/// per name.
struct ReferenceTool: Sendable {
    /// The executable.
    var path: String
    /// Arguments before the names.
    var arguments: [String] = []
    /// Whether names go on the command line (in batches) rather than on stdin.
    var takesNamesAsArguments = false

    /// GNU binutils' `c++filt`: libiberty's Itanium demangler and its own Rust demangler.
    static let gnuCxxfilt = ReferenceTool(path: "/usr/bin/c++filt")
    /// LLVM 14's `llvm-cxxfilt`, whose Rust v0 demangler is an independent implementation.
    static let llvmCxxfilt = ReferenceTool(path: "/usr/bin/llvm-cxxfilt-14")
    /// The toolchain's `swift-demangle` with its default spelling (type sugar: `[A]`, not
    /// `Swift.Array<A>`), one name per line. Names go on the command line: its stdin mode scans
    /// text for symbols and is very slow on invalid ones.
    static let swiftDemangle = ReferenceTool(
        path: toolchainBinary("swift-demangle"), arguments: ["--compact"], takesNamesAsArguments: true)
    /// `swift-demangle --no-sugar`: what the runtime's `swift_demangle` prints.
    static let swiftDemangleNoSugar = ReferenceTool(
        path: toolchainBinary("swift-demangle"), arguments: ["--no-sugar", "--compact"], takesNamesAsArguments: true)

    /// `rustc-demangle` itself (the crate std uses for backtraces), built once per test run from
    /// `Fixtures/demangle/reference/rustc_demangle_filter.rs` against the toolchain's sysroot.
    static func rustcDemangle() throws -> ReferenceTool {
        try ReferenceTool(path: builtRustcDemangleFilter.get())
    }

    /// What the filter prints for a name `rustc-demangle` does not accept.
    static let notDemangled = "<not demangled>"

    /// Whether a `rustc-demangle` line is a failure. It checks a name up front without following
    /// back-references, so some errors only surface while printing; it then prints a marker where
    /// the error happened and `?` for each part it could not print after it, and goes on. An error
    /// inside a part it parses without printing (an impl's own path) leaves only the `?`s. A `?`
    /// can otherwise appear only inside char or string literals, which are removed before looking.
    static func isRustcFailure(_ line: String) -> Bool {
        if line == notDemangled || line.contains("{invalid syntax}") || line.contains("{recursion limit reached}")
            || line.contains("{size limit reached}") {
            return true
        }
        let withoutLiterals = line
            .replacing(/"(?:[^"\\]|\\.)*"/, with: "")
            .replacing(/'(?:[^'\\]|\\u\{[0-9a-f]+\}|\\.)'/, with: "")
        return withoutLiterals.contains("?")
    }

    /// Demangles `names`, returning one output line per name.
    func demangle(_ names: [String]) throws -> [String] {
        guard takesNamesAsArguments else { return try demangleThroughStdin(names) }
        var lines: [String] = []
        for start in stride(from: 0, to: names.count, by: 500) {
            let batch = Array(names[start..<min(start + 500, names.count)])
            lines += try Self.lines(of: Self.run(path, arguments + batch), expected: batch.count, from: path)
        }
        return lines
    }

    /// Demangles `names` written to the tool's stdin, one per line.
    private func demangleThroughStdin(_ names: [String]) throws -> [String] {
        let input = Data((names.joined(separator: "\n") + "\n").utf8)
        return try Self.lines(of: Self.run(path, arguments, input: input), expected: names.count, from: path)
    }

    /// The lines of a tool's output, which must be one per name.
    private static func lines(of output: String, expected: Int, from path: String) throws -> [String] {
        var lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        guard lines.count == expected else {
            throw ToolError(description: "\(path) printed \(lines.count) lines for \(expected) names")
        }
        return lines
    }

    /// Whether the tool dies on `name` (a crash or a non-zero exit) when run alone on it, with
    /// its address space capped so a runaway allocation fails fast instead of burdening the
    /// machine.
    func crashes(on name: String) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -v 400000; exec \"$0\" \"$@\"", path] + arguments + [name]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal || process.terminationStatus != 0
    }

    /// Runs a process to completion and returns its standard output; throws when it fails.
    static func run(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], input: Data = Data()
    ) throws -> String {
        let run = try Tool.run(path, arguments, input: input, environment: environment)
        guard run.status == 0 else { throw ToolError(description: "\(path) exited \(run.status): \(run.stderr)") }
        return run.text
    }

    /// A per-process directory for tool inputs and the built filter, removed at exit.
    static let scratchDirectory: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("symdemangle-tests-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: ReferenceTool.scratchDirectory) }
        return url
    }()

    /// The filter binary, built on first use.
    private static let builtRustcDemangleFilter: Result<String, ToolError> = {
        let source = Fixtures.directory.appendingPathComponent("reference/rustc_demangle_filter.rs").path
        let binary = scratchDirectory.appendingPathComponent("rustc_demangle_filter").path
        guard let rustc = findExecutable("rustc", extraDirectories: [NSHomeDirectory() + "/.cargo/bin"]) else {
            return .failure(ToolError(description: "rustc not found on PATH or in ~/.cargo/bin"))
        }
        do {
            // rustc_private is unstable; RUSTC_BOOTSTRAP lets a stable toolchain use it.
            _ = try run(rustc, ["-O", source, "-o", binary], environment: ["RUSTC_BOOTSTRAP": "1"])
            return .success(binary)
        } catch let error as ToolError {
            return .failure(error)
        } catch {
            return .failure(ToolError(description: "\(error)"))
        }
    }()

    /// A program in the Swift toolchain running these tests (falls back to `/opt/swift/usr/bin`).
    private static func toolchainBinary(_ name: String) -> String {
        findExecutable(name, extraDirectories: ["/opt/swift/usr/bin"]) ?? "/opt/swift/usr/bin/\(name)"
    }

    /// The first executable `name` on PATH or in `extraDirectories`.
    static func findExecutable(_ name: String, extraDirectories: [String]) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + extraDirectories
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
