import Foundation
import SymBytes
import SymELF
import SymUnwind
import TestSupport

/// Paths and peers the unwind tests use.
enum UnwindFixtures {
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    static func elf(_ name: String) -> String { root + "/Fixtures/elf/" + name }

    /// Third-party reference data (DESIGN.md: a real minidump with its binary and Breakpad CFI).
    static let reference = root + "/../shared/reference/minidump-linux"

    static let libc = "/lib/x86_64-linux-gnu/libc.so.6"
    static let python = "/usr/bin/python3.11d"

    /// The Python of the venv that `scripts/deps test` installs Sentry's `symbolic` into.
    static var symbolicPython: String {
        if let path = ProcessInfo.processInfo.environment["CRASHSYM_SYMBOLIC_PYTHON"] { return path }
        let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
        return cache + "/crashsym-test/venv-symbolic-13.9.0/bin/python"
    }

    /// symbolic's `CfiCache` of an ELF file: Breakpad `STACK CFI` text.
    static func symbolicCFI(_ path: String) throws -> String {
        let script = """
            import sys, io
            from symbolic import Archive, CfiCache
            obj = next(iter(Archive.open(sys.argv[1]).iter_objects()))
            buffer = io.BytesIO()
            CfiCache.from_object(obj).write_to(buffer)
            sys.stdout.buffer.write(buffer.getvalue())
            """
        guard FileManager.default.isExecutableFile(atPath: symbolicPython) else {
            throw OracleMissing(message: "symbolic is not installed at \(symbolicPython): run scripts/deps test")
        }
        let run = try Tool.run(symbolicPython, ["-c", script, path])
        guard run.status == 0 else { throw OracleMissing(message: "symbolic failed on \(path): \(run.stderr)") }
        return run.text
    }

    struct OracleMissing: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// The call-frame information of an ELF file as SymUnwind reads it.
    static func callFrameInfo(_ path: String) throws -> CallFrameInfo {
        try CallFrameInfo.read(binary: ELFFile(path: path))
    }

    /// One section's bytes and address.
    static func section(_ name: String, of path: String) throws -> (bytes: [UInt8], address: UInt64)? {
        let file = try ELFFile(path: path)
        guard let section = file.section(named: name), !section.isNoBits else { return nil }
        return (try file.contents(of: section).copyBytes(), section.address)
    }
}

/// The rules of `STACK CFI` records as they stand at each address: a Breakpad walker's view,
/// whatever the text's order, spacing or splitting into records.
struct EvaluatedCFI {
    /// `[start, end)` with the rules in force there (name → postfix), sorted by start.
    struct Span {
        var start: UInt64
        var end: UInt64
        var rules: [String: String]
    }

    var spans: [Span] = []

    init(text: String) {
        var current: (start: UInt64, end: UInt64, rows: [(UInt64, [String: String])])?
        func close() {
            guard let record = current else { return }
            for (index, row) in record.rows.enumerated() {
                let end = index + 1 < record.rows.count ? record.rows[index + 1].0 : record.end
                if row.0 < end { spans.append(Span(start: row.0, end: min(end, record.end), rules: row.1)) }
            }
        }
        for line in text.split(separator: "\n") where line.hasPrefix("STACK CFI ") {
            let words = line.split(separator: " ").map(String.init)
            if words[2] == "INIT" {
                close()
                let start = UInt64(words[3], radix: 16)!, size = UInt64(words[4], radix: 16)!
                current = (start, start + size, [(start, Self.rules(words.dropFirst(5), over: [:]))])
            } else if let record = current {
                let address = UInt64(words[2], radix: 16)!
                current!.rows.append((address, Self.rules(words.dropFirst(3), over: record.rows.last!.1)))
            }
        }
        close()
        spans.sort { $0.start < $1.start }
    }

    static func rules(_ words: ArraySlice<String>, over previous: [String: String]) -> [String: String] {
        var rules = previous
        var name: String?
        var value: [String] = []
        for word in words + ["end:"] {
            if word.hasSuffix(":") {
                if let name { rules[name] = value.joined(separator: " ") }
                name = String(word.dropLast())
                value = []
            } else {
                value.append(word)
            }
        }
        return rules
    }

    /// The distinct rule sets of the spans covering `address`.
    func rules(at address: UInt64) -> Set<[String: String]> {
        var low = 0, high = spans.count
        while low < high {
            let middle = (low + high) / 2
            if spans[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        var found = Set<[String: String]>()
        var index = low - 1
        var looked = 0
        while index >= 0 && looked < 256 {
            if address < spans[index].end { found.insert(spans[index].rules) }
            index -= 1
            looked += 1
        }
        return found
    }

    /// One address range where two evaluations disagree.
    struct Difference {
        var start: UInt64
        var end: UInt64
        var reference: Set<[String: String]>
        var ours: Set<[String: String]>
    }

    /// The ranges where `self` (the reference) and `ours` give different rules.
    func differences(from ours: EvaluatedCFI) -> [Difference] {
        var points = Set<UInt64>()
        for span in spans + ours.spans { points.insert(span.start); points.insert(span.end) }
        let sorted = points.sorted()
        var result: [Difference] = []
        for (index, point) in sorted.enumerated().dropLast() {
            let reference = rules(at: point), mine = ours.rules(at: point)
            if reference != mine {
                result.append(Difference(start: point, end: sorted[index + 1], reference: reference, ours: mine))
            }
        }
        return result
    }
}
