import SymBytes
import SymELF
import Testing

/// Compressed sections that declare far more than their file could honestly hold (issue 19 item
/// 18): a 1.1 MB file declaring a 1 GiB `.debug_str` made `dump` use 1.06 GB. Each file is made
/// here by binutils: a program whose `.debug_str` is replaced by seeded random bytes followed by
/// zeros, then compressed (zlib, zstd or GNU `.zdebug`), so the data really inflates to what it
/// declares.
@Suite("decompression bombs")
struct DecompressionBombTests {
    enum Compression: String, CaseIterable, CustomTestStringConvertible {
        case zlib, zstd, zlibGNU = "zlib-gnu"
        var testDescription: String { rawValue }
    }

    /// `program` with a `.debug_str` of `random` seeded random bytes (hex digits when `hexDigits`,
    /// which compress to about half), then zeros up to `total` bytes, compressed with
    /// `compression` (binutils leaves a section that would not shrink uncompressed).
    static func bomb(_ compression: Compression, random: Int, total: Int, hexDigits: Bool = false,
                     in directory: TemporaryDirectory) throws -> String {
        let program = try Fixtures.shared.get().program
        let contents = directory.file("debug_str.bin")
        let output = directory.file("bomb-\(compression.rawValue)")
        try Shell.run("""
            python3 -c 'import random, sys; data = random.Random(19).randbytes(\(random)); \
            sys.stdout.buffer.write(data.translate(bytes(b"0123456789abcdef"[i % 16] for i in range(256))) if \(hexDigits ? "True" : "False") else data)' > \(contents) \
            && truncate -s \(total) \(contents) \
            && objcopy --update-section .debug_str=\(contents) \(program) \(output).plain \
            && objcopy --compress-debug-sections=\(compression.rawValue) \(output).plain \(output) \
            && rm \(contents) \(output).plain
            """)
        return output
    }

    /// The compressed `.debug_str` (or `.zdebug_str`).
    static func debugString(_ file: ELFFile) throws -> ELFSection {
        try #require(file.section(named: ".debug_str"))
    }

    @Test("a section declaring over 100 times the file's size is refused before decompressing, whole or streamed",
          arguments: Compression.allCases)
    func refusedInProcess(_ compression: Compression) throws {
        let directory = try TemporaryDirectory("bomb")
        defer { directory.remove() }
        // 600 KB of random data then zeros up to 128 MiB: 1:220, under zlib's 1000:1 for one
        // section but over 100:1 for the file (about 0.6 MB).
        let path = try Self.bomb(compression, random: 600_000, total: 128 << 20, in: directory)
        let file = try ELFFile(path: path)
        let section = try Self.debugString(file)
        #expect(section.isCompressed)
        #expect(file.decompressionAllowance < 128 << 20)
        let error = #expect(throws: FormatError.self) { try file.contents(of: section) }
        #expect(error?.code == .limitExceeded)
        #expect(error?.message.contains("times the file") == true, "\(String(describing: error))")
        let streamError = #expect(throws: FormatError.self) { try file.streamedContents(of: section) }
        #expect(streamError?.code == .limitExceeded)
        // The other compressed sections of a bomb are refused too: the file's allowance is spent.
        let info = try #require(file.section(named: ".debug_info"))
        #expect(throws: FormatError.self) { try file.contents(of: info) }
    }

    @Test("crashsym dump of a bomb fails with one clear line, and its peak memory stays small",
          arguments: Compression.allCases)
    func dumpMemoryBounded(_ compression: Compression) throws {
        let directory = try TemporaryDirectory("bomb")
        defer { directory.remove() }
        let path = try Self.bomb(compression, random: 600_000, total: 128 << 20, in: directory)
        let run = try ChildRun(crashsymExecutable, ["dump", path, "-o", directory.file("out")], scratch: directory)
        #expect(run.status == 1, "\(run.standardError)")
        #expect(run.standardError.contains("declare"), "\(run.standardError)")
        // Decompressing the 128 MiB would need that much; refused, dump needs about 20 MB.
        #expect(run.maximumResidentKiB < 80 << 10, "peak RSS \(run.maximumResidentKiB) KiB")
    }

    @Test("a declared size the data does not bear out is never allocated (1.5 GiB declared under a 1 GiB address space)",
          arguments: [Compression.zlib, .zstd, .zlibGNU])
    func declaredSizeNotAllocated(_ compression: Compression) throws {
        let directory = try TemporaryDirectory("bomb")
        defer { directory.remove() }
        // 40 MB of random hex digits, about 20 MB compressed: the file may declare about 2 GB in
        // all, the section 20 GB by its ratio; it is made to declare 1.5 GiB, which it does not hold.
        let path = try Self.bomb(compression, random: 40_000_000, total: 40_000_000, hexDigits: true, in: directory)
        var bytes = try readBytes(path)
        let section = try Self.debugString(ELFFile(bytes: bytes))
        let declared: UInt64 = 3 << 29
        if compression == .zlibGNU {
            patch(&bytes, at: Int(section.offset) + 4, declared, width: 8, littleEndian: false)
        } else {
            patch(&bytes, at: Int(section.offset) + 8, declared, width: 8)
        }
        try writeBytes(bytes, to: path)
        let file = try ELFFile(path: path)
        #expect(file.decompressionAllowance > declared)
        let error = #expect(throws: FormatError.self) { try file.contents(of: Self.debugString(file)) }
        #expect(error?.code == .decompression, "\(String(describing: error))")
        // In a process that cannot map 1.5 GiB, dump says what is wrong with the data, not that
        // memory ran out.
        let run = try ChildRun(crashsymExecutable, ["dump", path, "-o", directory.file("out")], scratch: directory,
                               addressSpaceLimitKiB: 1 << 20)
        #expect(run.status == 1)
        #expect(run.standardError.contains("declared 1610612736"), "\(run.standardError)")
        #expect(!run.standardError.contains("cannot allocate"), "\(run.standardError)")
    }
}
