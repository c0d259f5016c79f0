import Foundation
import SymCore
import SymELF
import SymReport
@testable import Symbolication
import Testing

/// The check of a file on disk against what a core says of its mappings, on cores and ELF files
/// built byte by byte: agreeing, contradicting, and hostile (overflowing ranges, many segments, files that are not ELF).
@Suite struct DiskImageCheckTests {
    typealias Builder = CoreFileTests.CoreBuilder

    /// A 64-bit ELF shared object of `loads` (type, flags, offset, address, file size, memory
    /// size), its program headers after the header, `size` bytes in all (filled with a pattern).
    static func image(_ loads: [(type: UInt64, flags: UInt64, offset: UInt64, address: UInt64, fileSize: UInt64, memorySize: UInt64)],
                      size: Int) -> [UInt8] {
        var header = [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0] + [UInt8](repeating: 0, count: 8)
        header += Builder.le(3, 2) + Builder.le(62, 2) + Builder.le(1, 4) + Builder.le(0, 8)
        header += Builder.le(64, 8) + Builder.le(0, 8) + Builder.le(0, 4) + Builder.le(64, 2) + Builder.le(56, 2)
        header += Builder.le(UInt64(loads.count), 2) + Builder.le(64, 2) + Builder.le(0, 2) + Builder.le(0, 2)
        for load in loads {
            header += Builder.le(load.type, 4) + Builder.le(load.flags, 4) + Builder.le(load.offset, 8) + Builder.le(load.address, 8)
            header += Builder.le(load.address, 8) + Builder.le(load.fileSize, 8) + Builder.le(load.memorySize, 8) + Builder.le(4096, 8)
        }
        let pattern = (header.count..<max(size, header.count)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return header + pattern
    }

    /// A core mapping `path` as `files` (start, end, page offset), holding `memory` (address, bytes).
    static func core(_ files: [(UInt64, UInt64, UInt64)], memory: [(UInt64, [UInt8])] = [], path: String = "/lib/x.so") throws -> CoreFile {
        var builder = Builder()
        builder.notes = [("CORE", 1, Builder.prstatus(tid: 1, signal: 11, rip: 0x10000, rsp: 0, rbp: 0)),
                         ("CORE", 0x4649_4c45, Builder.fileNote(files.map { ($0.0, $0.1, $0.2, path) }))]
        builder.loads = memory.map { (address: $0.0, bytes: $0.1, memorySize: UInt64($0.1.count)) }
        return try CoreFile(bytes: builder.build())
    }

    static func mismatch(_ core: CoreFile, _ bytes: [UInt8], path: String = "/lib/x.so") throws -> String? {
        let file = try ELFFile(bytes: bytes, path: path)
        return bytes.withUnsafeBytes { core.diskImageMismatch(mappedAt: path, file: file, bytes: $0) }
    }

    /// Two segments: headers and text (read-only, executable) at 0, data (writable) at file
    /// offset 0x1000, address 0x2000.
    static let twoSegments = image([(1, 5, 0, 0, 0x1800, 0x1800), (1, 6, 0x1800, 0x2800, 0x100, 0x200)], size: 0x1900)

    @Test("Mappings at their segments' places with one bias, the core's read-only pages equal to the file's: agrees")
    func agrees() throws {
        let file = Self.twoSegments
        let core = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1)],
                                 memory: [(0x11000, Array(file[0x1000..<0x1800]) + [UInt8](repeating: 0, count: 0x800))])
        #expect(try Self.mismatch(core, file) == nil)
    }

    @Test("A byte of a read-only page the core holds differs: refused, with where")
    func bytesDiffer() throws {
        var file = Self.twoSegments
        let core = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1)], memory: [(0x11000, Array(file[0x1000..<0x1800]))])
        file[0x1234] ^= 0xff
        #expect(try Self.mismatch(core, file) == "the core's bytes at 0x11000 (file offset 0x1000, a read-only segment) differ from the file's")
        // A writable segment's pages are not compared (the process writes them).
        var data = Self.twoSegments
        let dataCore = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1)], memory: [(0x12000, Array(data[0x1000..<0x1900]))])
        data[0x1850] ^= 0xff
        #expect(try Self.mismatch(dataCore, data) == nil)
    }

    @Test("A mapping at another bias, outside every segment, or past the file's end: refused")
    func layoutDiffers() throws {
        // The data mapping one page off its segment's place.
        let shifted = try Self.core([(0x10000, 0x12000, 0), (0x13000, 0x14000, 1)])
        #expect(try Self.mismatch(shifted, Self.twoSegments)?.hasPrefix("the mapping 0x13000-0x14000 of file offset 0x1000 is in no PT_LOAD segment") == true)
        // A mapping of file pages no segment covers.
        let beyond = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1), (0x20000, 0x21000, 9)])
        #expect(try Self.mismatch(beyond, Self.twoSegments)?.hasPrefix("the mapping 0x20000-0x21000 of file offset 0x9000") == true)
        // The file cut inside its data segment.
        let short = Array(Self.twoSegments.prefix(0x1880))
        let core = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1)])
        #expect(try Self.mismatch(core, short) == "the file is 6272 bytes, the mapping at 0x12000 needs its bytes up to offset 0x1900")
    }

    @Test("Hostile: segments whose ranges overflow, 2000 segments, a mapping at the top of the offsets, no PT_LOAD")
    func hostile() throws {
        let core = try Self.core([(0x10000, 0x11000, 0), (0xffff_ffff_ffff_e000, 0xffff_ffff_ffff_f000, 0xf_ffff_ffff_fffe)])
        let overflowing = Self.image([(1, 5, 0xffff_ffff_ffff_f000, 0, 0x2000, 0x2000)], size: 0x200)
        #expect(try Self.mismatch(core, overflowing) == "a PT_LOAD segment's range overflows")
        let memoryOverflow = Self.image([(1, 5, 0, 0xffff_ffff_ffff_f000, 0x100, 0x2000)], size: 0x200)
        #expect(try Self.mismatch(core, memoryOverflow) == "a PT_LOAD segment's range overflows")
        let many = Self.image(Array(repeating: (1, 5, 0, 0, 0x100, 0x100), count: 2000), size: 0)
        #expect(try Self.mismatch(core, many) == "it declares 2000 PT_LOAD segments")
        // The mapping at the top of the file offsets fits nothing, without trapping.
        let small = Self.image([(1, 5, 0, 0, 0x200, 0x200)], size: 0x200)
        #expect(try Self.mismatch(core, small)?.hasPrefix("the mapping 0xffffffffffffe000-0xfffffffffffff000") == true)
        let noLoads = Self.image([(0x6474_e551, 6, 0, 0, 0, 0)], size: 0x200)  // PT_GNU_STACK only
        #expect(try Self.mismatch(core, noLoads) == "it has no PT_LOAD segment")
        // A path the core does not map: nothing to contradict.
        #expect(try Self.mismatch(core, small, path: "/lib/other.so") == nil)
    }

    @Test("The file at the path: not ELF (a data file mapped from its start), absent: nothing to verify; ELF magic on garbage: refused; the right one verified")
    func filesOnDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("disk-image-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/x.so"
        let core = try Self.core([(0x10000, 0x12000, 0), (0x12000, 0x13000, 1)], path: path)
        guard case .none = core.diskImage(at: path, mappedAt: path) else { Issue.record("an absent file verified or refused"); return }
        try Data("locale archive".utf8).write(to: URL(fileURLWithPath: path))
        guard case .none = core.diskImage(at: path, mappedAt: path) else { Issue.record("a data file verified or refused"); return }
        try Data([0x7f, 0x45, 0x4c, 0x46, 9, 9, 9, 9]).write(to: URL(fileURLWithPath: path))
        guard case .refused(let garbage) = core.diskImage(at: path, mappedAt: path) else { Issue.record("garbage ELF not refused"); return }
        #expect(garbage.code == .unreadableImage && garbage.path == path)
        #expect(garbage.message.hasPrefix("file on disk does not match the core's mappings: it is not a readable ELF file ("), "\(garbage)")
        try Data(Self.twoSegments).write(to: URL(fileURLWithPath: path))
        guard case .verified = core.diskImage(at: path, mappedAt: path) else { Issue.record("the right file refused"); return }
        // --executable names another path for the same mappings: the reason names it.
        let elsewhere = directory + "/y.so"
        try Data(Self.twoSegments.prefix(0x1880)).write(to: URL(fileURLWithPath: elsewhere))
        guard case .refused(let short) = core.diskImage(at: elsewhere, mappedAt: path) else { Issue.record("a short file verified"); return }
        #expect(short == ModuleRefusal(.mappingMismatch, "file on disk (\(elsewhere)) does not match the core's mappings: the file is 6272 bytes, the mapping at 0x12000 needs its bytes up to offset 0x1900", path: elsewhere))
    }
}
