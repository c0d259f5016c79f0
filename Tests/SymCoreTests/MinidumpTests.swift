import Foundation
import SymBytes
import SymCore
import Testing
import TestSupport

/// The minidump reader on the real Breakpad minidump (facts from its README: what Breakpad's
/// processor reported) and on hostile ones.
@Suite struct MinidumpTests {
    static let directory: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/../shared/reference/minidump-linux"
    }()

    static func realBytes() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/crash_linux.dmp")))
    }

    @Test("crash_linux.dmp: thread, crash, module, system as Breakpad's processor reported them")
    func readmeFacts() throws {
        let dump = try Minidump(file: MappedFile(path: Self.directory + "/crash_linux.dmp"))
        #expect(dump.timestamp == 1_505_305_040)
        #expect(dump.threads.count == 1)
        #expect(dump.threads.first?.id == 133)
        #expect(dump.crashedThread?.id == 133)
        #expect(dump.exception?.address == 0)
        #expect(dump.crashReason == "SIGSEGV /0x00000000")
        let system = try #require(dump.system)
        #expect(system.operatingSystem == "Linux")
        #expect(system.kernelRelease == "4.9.46-moby")
        #expect(system.kernelVersion == "#1 SMP Thu Sep 7 02:53:42 UTC 2017")
        #expect(system.cpu == "amd64")
        #expect(system.cpuInfo == "family 6 model 70 stepping 1")
        #expect(system.processorCount == 4)
        #expect(system.vendor == "GenuineIntel")
        let module = try #require(dump.modules.first)
        #expect(module.base == 4_194_304 && module.size == 196_608)
        #expect(module.name == "/breakpad/examples/target/crash_linux")
        #expect(module.codeID.map(hexString) == "db4c55d26192c436b9766a086583b9b5a6d2e271")
        #expect(module.debugID == "D2554CDB926136C4B9766A086583B9B50")
        #expect(dump.modules.count == 8)
        #expect(dump.modules.allSatisfy { $0.codeViewSignature == 0x4270_454c && $0.codeID?.count == 20 })
        // Linux streams: the maps name the binary; the command line is NUL-separated.
        let maps = String(decoding: dump.linuxFiles[.maps] ?? [], as: UTF8.self)
        #expect(maps.contains("/breakpad/examples/target/crash_linux"))
        #expect(dump.linuxFiles[.cpuInfo].map { String(decoding: $0, as: UTF8.self).contains("GenuineIntel") } == true)
        #expect(dump.linuxFiles.count == 7)
        // The crashed thread's registers (the exception's context) and its stack memory.
        let exception = try #require(dump.exception)
        let context = try MinidumpContext(amd64: dump.bytes(exception.context))
        let sp = try #require(context.sp)
        #expect(dump.read(sp, size: 8) != nil)
        #expect(context.pc.map { $0 >= module.base && $0 < module.base + UInt64(module.size) } == true)
    }

    @Test("Reads follow the threads as they are: a stack moved after reading is read at its new place, not its old one")
    func readsFollowChangedThreads() throws {
        var dump = try Minidump(file: MappedFile(path: Self.directory + "/crash_linux.dmp"))
        let stack = try #require(dump.threads.first?.stack)
        let word = try #require(dump.read(stack.start, size: 8))
        let moved: UInt64 = 0x1234_0000_0000
        #expect(dump.read(moved, size: 8) == nil)
        dump.threads[0].stack.start = moved
        #expect(dump.read(moved, size: 8) == word, "the stack's bytes at its new address")
        #expect(dump.read(moved + UInt64(stack.location.count) - 8, size: 8) != nil, "to its end")
        #expect(dump.read(moved + UInt64(stack.location.count), size: 8) == nil, "and not past it")
    }

    @Test("Truncation at every byte: an error or a smaller dump, never a trap")
    func truncation() throws {
        let bytes = try Self.realBytes()
        var failures = 0
        for length in 0..<bytes.count {
            do {
                _ = try Minidump(bytes: Array(bytes.prefix(length)))
            } catch {
                failures += 1
            }
        }
        // Everything past the header is referenced by the directory at the end of the header:
        // every cut before the last stream's end fails.
        #expect(failures > bytes.count / 2)
    }

    @Test("Seeded mutations, counts in the millions, ranges outside the file", arguments: 0..<4)
    func mutation(_ round: UInt64) throws {
        let original = try Self.realBytes()
        var random = SplitMix64(seed: 0x15_1000 + round)
        func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
            for index in 0..<4 where offset + index < bytes.count { bytes[offset + index] = UInt8(value >> (8 * UInt32(index)) & 0xff) }
        }
        for _ in 0..<200 {
            var bytes = original
            for _ in 0..<random.int(1...8) {
                let offset = random.int(0...(bytes.count - 1))
                switch random.int(0...3) {
                case 0: bytes[offset] = UInt8(truncatingIfNeeded: random.next())
                case 1: put([0xffff_ffff, 0x7fff_ffff, 1_000_000, 0x8000_0000][random.int(0...3)], at: offset & ~3, in: &bytes)
                case 2: put(UInt32(random.int(0...(bytes.count + 64))), at: offset & ~3, in: &bytes)  // overlapping ranges
                default: bytes[offset] ^= 0xff
                }
            }
            if let dump = try? Minidump(bytes: bytes) {
                // Whatever was read lies inside the file.
                for range in dump.memory + dump.threads.map(\.stack) { #expect(range.location.upperBound <= bytes.count) }
                for thread in dump.threads { _ = dump.bytes(thread.context) }
                _ = dump.crashReason
            }
        }
    }

    @Test("Threads sharing one stack (a hostile list): every thread reads the stack and walks to the same frames")
    func threadsSharingAStack() throws {
        var bytes = try Self.realBytes()
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let directory = u32(12)
        let entry = try #require((0..<u32(8)).map { directory + 12 * $0 }.first { u32($0) == 3 })
        let list = u32(entry + 8)
        let thread = Array(bytes[(list + 4)..<(list + 52)])
        let copies = 5_000
        let rva = bytes.count
        bytes += le32(copies)
        for _ in 0..<copies { bytes += thread }
        bytes.replaceSubrange((entry + 4)..<(entry + 12), with: le32(4 + 48 * copies) + le32(rva))
        let original = try Minidump(bytes: try Self.realBytes())
        let dump = try Minidump(bytes: bytes)
        #expect(dump.threads.count == copies)
        let stack = try #require(original.threads.first?.stack)
        for offset in stride(from: UInt64(0), to: UInt64(stack.location.count), by: 512) {
            #expect(dump.read(stack.start + offset, size: 8) == original.read(stack.start + offset, size: 8))
        }
        #expect(dump.read(stack.start + UInt64(stack.location.count) - 4, size: 8) == nil, "a read past the stack's end")
        let expected = try original.walk(original.threads[0]) { _ in nil }.map(\.pc)
        #expect(expected.count > 1)
        for index in [0, 1, copies / 2, copies - 1] {
            #expect(try dump.walk(dump.threads[index]) { _ in nil }.map(\.pc) == expected, "thread \(index)")
        }
    }

    /// A minidump with one stream, for hand-made hostile cases.
    static func dump(streamType: UInt32, stream: [UInt8], streamCount: UInt32 = 1) -> [UInt8] {
        var bytes: [UInt8] = []
        func u32(_ value: UInt32) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        u32(0x504d_444d); u32(0xa793); u32(streamCount); u32(32); u32(0); u32(0); u32(0); u32(0)
        u32(streamType); u32(UInt32(stream.count)); u32(44)
        bytes += stream
        return bytes
    }

    @Test("Hostile headers and lists give FormatErrors")
    func hostile() {
        func le(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        let cases: [(String, [UInt8])] = [
            ("not a minidump", Array("ELF\u{7f}0000000000000000000000000000".utf8)),
            ("a million streams", Self.dump(streamType: 3, stream: le(0), streamCount: 1_000_000)),
            ("a thread count in the millions", Self.dump(streamType: 3, stream: le(5_000_000) + [UInt8](repeating: 0, count: 48))),
            ("a module count past the stream", Self.dump(streamType: 4, stream: le(2) + [UInt8](repeating: 0, count: 108))),
            ("a memory range outside the file", Self.dump(streamType: 5, stream: le(1) + [UInt8](repeating: 0, count: 8) + le(16) + le(0xffff_fff0))),
            ("a 64-bit memory list past the file", Self.dump(streamType: 9, stream: [1, 0, 0, 0, 0, 0, 0, 0] + [44, 0, 0, 0, 0, 0, 0, 0]
                + [UInt8](repeating: 0, count: 8) + [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])),
            ("a short exception stream", Self.dump(streamType: 6, stream: [UInt8](repeating: 0, count: 40))),
            ("a string longer than the file", Self.dump(streamType: 4, stream: le(1) + [UInt8](repeating: 0, count: 20) + le(44) + [UInt8](repeating: 0, count: 84))),
        ]
        for (what, bytes) in cases {
            #expect(throws: FormatError.self, "\(what)") { try Minidump(bytes: bytes) }
        }
    }

    @Test("The 64-bit memory list (full-memory dumps): ranges back to back from one base, read with the memory list's")
    func memory64List() throws {
        var bytes: [UInt8] = []
        func u32(_ value: UInt32) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        func u64(_ value: UInt64) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        // Header, a directory of two streams: the 64-bit memory list (2 ranges) and the memory list (1).
        u32(0x504d_444d); u32(0xa793); u32(2); u32(32); u32(0); u32(0); u64(0)
        let directory = 32, list64 = directory + 24, list = list64 + 16 + 2 * 16, data = list + 4 + 16
        u32(9); u32(UInt32(list - list64)); u32(UInt32(list64))
        u32(5); u32(UInt32(data - list)); u32(UInt32(list))
        // 0x7000 (16 bytes) and 0x9000 (8 bytes), their bytes from `data + 8` on; 0x5000 (8 bytes) at `data`.
        u64(2); u64(UInt64(data + 8))
        u64(0x7000); u64(16)
        u64(0x9000); u64(8)
        u32(1); u64(0x5000); u32(8); u32(UInt32(data))
        u64(0x5555_5555_5555_5555)
        u64(0x1111_1111_1111_1111); u64(0x2222_2222_2222_2222)
        u64(0x9999_9999_9999_9999)
        let dump = try Minidump(bytes: bytes)
        #expect(dump.memory.map(\.start) == [0x5000, 0x7000, 0x9000])
        #expect(dump.read(0x7000, size: 8) == 0x1111_1111_1111_1111)
        #expect(dump.read(0x7008, size: 8) == 0x2222_2222_2222_2222)
        #expect(dump.read(0x7004, size: 4) == 0x1111_1111)
        #expect(dump.read(0x9000, size: 8) == 0x9999_9999_9999_9999)
        #expect(dump.read(0x5000, size: 8) == 0x5555_5555_5555_5555)
        // Past a range's end, or across two ranges: absent.
        #expect(dump.read(0x700c, size: 8) == nil)
        #expect(dump.read(0x9004, size: 8) == nil)
        #expect(dump.read(0x8000, size: 1) == nil)
        // A base that puts the second range past the file's end is refused.
        var cut = bytes
        cut.removeLast(4)
        #expect { try Minidump(bytes: cut) } throws: { ($0 as? FormatError)?.code == .truncated }
    }

    @Test("Crashpad annotations and thread names are read from a hand-made dump")
    func crashpadAndThreadNames() throws {
        var bytes: [UInt8] = []
        func u32(_ value: UInt32) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        func u64(_ value: UInt64) { bytes += withUnsafeBytes(of: value.littleEndian) { Array($0) } }
        func utf8(_ text: String) -> UInt32 { let at = UInt32(bytes.count); u32(UInt32(text.utf8.count)); bytes += Array(text.utf8); bytes.append(0); return at }
        // Header and a 3-entry directory (filled in below).
        u32(0x504d_444d); u32(0xa793); u32(3); u32(32); u32(0); u32(7); u64(0)
        let directory = bytes.count
        bytes += [UInt8](repeating: 0, count: 36)
        // Thread list: one thread, id 7, empty stack and context.
        let threads = UInt32(bytes.count)
        u32(1); u32(7); u32(0); u32(0); u32(0); u64(0); u64(0x1000); u32(0); u32(0); u32(0); u32(0)
        // Thread name "worker" (UTF-16).
        let name = UInt32(bytes.count)
        u32(12); for unit in "worker".utf16 { bytes += [UInt8(unit & 0xff), UInt8(unit >> 8)] }
        let names = UInt32(bytes.count)
        u32(1); u32(7); u64(UInt64(name))
        // Crashpad: a simple annotation "channel" = "beta" and a module with a list annotation.
        let key = utf8("channel"), value = utf8("beta"), item = utf8("abort() called")
        let dictionary = UInt32(bytes.count)
        u32(1); u32(key); u32(value)
        let list = UInt32(bytes.count)
        u32(1); u32(item)
        let moduleInfo = UInt32(bytes.count)
        u32(1); u32(8); u32(list); u32(0); u32(0); u32(0); u32(0)
        let moduleList = UInt32(bytes.count)
        u32(1); u32(0); u32(28); u32(moduleInfo)
        let crashpad = UInt32(bytes.count)
        u32(1); bytes += [UInt8](repeating: 0, count: 32); u32(12); u32(dictionary); u32(16); u32(moduleList)
        let end = UInt32(bytes.count)
        func entry(_ index: Int, _ type: UInt32, _ rva: UInt32, _ size: UInt32) {
            for (offset, value) in [type, size, rva].enumerated() {
                for byte in 0..<4 { bytes[directory + index * 12 + offset * 4 + byte] = UInt8(value >> (8 * UInt32(byte)) & 0xff) }
            }
        }
        entry(0, 3, threads, name - threads)
        entry(1, 24, names, 16)
        entry(2, 0x4350_0001, crashpad, end - crashpad)
        let dump = try Minidump(bytes: bytes)
        #expect(dump.threads.map(\.id) == [7])
        #expect(dump.threads.first?.name == "worker")
        #expect(dump.annotations?.simple == ["channel": "beta"])
        #expect(dump.annotations?.modules[0]?.list == ["abort() called"])
    }
}
