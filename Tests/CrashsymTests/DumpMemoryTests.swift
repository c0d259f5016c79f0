import Foundation
import Testing
import TestSupport

/// `crashsym dump`'s peak memory, measured on its own process (`ru_maxrss` of a child): the test
/// runner's own RSS moves with every suite running beside this one.
@Suite struct DumpMemoryTests {
    static let python = "/usr/bin/python3.11d"

    /// Peak RSS (KiB) and exit status of crashsym run with `arguments`, its output discarded.
    ///
    /// Started from a small python3 process, not from the test runner: a process started with
    /// `posix_spawn` (clone with a shared address space, then exec) inherits the runner's peak RSS
    /// in its `ru_maxrss`. python forks, so crashsym's peak is its own.
    static func peakRSS(_ arguments: [String]) throws -> (kilobytes: Int, status: Int32) {
        let measure = """
            import resource, subprocess, sys
            status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            """
        let text = try Tool.output("/usr/bin/env", ["python3", "-c", measure, CLI.binary] + arguments)
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        try #require(fields.count == 2, "measurement printed \(text)")
        return (fields[1], Int32(fields[0]))
    }

    /// Bytes of the DWARF sections `dump` reads, as `readelf -SW` lists them.
    static func dwarfSize(_ path: String) throws -> Int {
        let text = try Tool.output("/usr/bin/readelf", ["-SW", path])
        let wanted: Set = [".debug_info", ".debug_abbrev", ".debug_line", ".debug_line_str", ".debug_str",
                           ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges"]
        var total = 0
        for line in text.split(separator: "\n") {
            // "  [34] .debug_info  PROGBITS  0000000000000000 2b1ab0 68d8e3 00 ..."
            guard let bracket = line.firstIndex(of: "]") else { continue }
            let fields = line[line.index(after: bracket)...].split(separator: " ")
            guard fields.count > 4, wanted.contains(String(fields[0])), let size = Int(fields[4], radix: 16) else { continue }
            total += size
        }
        return total
    }

    /// What dump needs beyond an idle crashsym (its own code pages and runtime) stays within 1.5×
    /// the DWARF it reads (issue 2's bound; before the writer took rows compactly it needed 2.1×).
    @Test func dumpOfPython3_11dNeedsAtMostOneAndAHalfTimesItsDWARF() throws {
        try #require(FileManager.default.fileExists(atPath: Self.python), "apt install python3.11-dbg")
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let dwarf = try Self.dwarfSize(Self.python)
        try #require(dwarf > 10 << 20, "python3.11d's DWARF: \(dwarf) bytes")
        let idle = try Self.peakRSS(["--help"])
        let dump = try Self.peakRSS(["dump", Self.python, "-o", output])
        #expect(idle.status == 0 && dump.status == 0)
        let work = (dump.kilobytes - idle.kilobytes) << 10
        #expect(work <= dwarf * 3 / 2,
                "dump peaked at \(dump.kilobytes >> 10) MiB, \(work >> 20) MiB above an idle crashsym, for \(dwarf >> 20) MiB of DWARF")
    }
}
