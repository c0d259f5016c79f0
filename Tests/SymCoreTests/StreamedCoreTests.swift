import Foundation
import SymBytes
import SymCore
import SymReport
import Symbolication
import Testing
import TestSupport

/// `StreamedCore`: a real core read once from a stream keeps what the walk needs, so its report
/// is the report of the whole core mapped; within its memory bound; hostile streams give errors.
@Suite struct StreamedCoreTests {
    static let names = ["crash-O0", "crash-O2", "threads", "libc-strlen", "signal-abort", "null-call",
                        "cpp-O0", "cpp-O2", "cpp-terminate", "rust-panic", "swift-unwrap"]

    static func bytes(_ name: String) throws -> [UInt8] {
        let directory = try #require(CoreWalkTests.cores, "scripts/build-core-fixtures failed")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name).core")))
    }

    /// A stream over `bytes` giving at most `chunk()` bytes a call (a pipe's short reads).
    static func stream(_ bytes: [UInt8], chunk: @escaping () -> Int = { 1 << 16 }) -> (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int {
        var position = 0
        return { buffer in
            let count = min(buffer.count, chunk(), bytes.count - position)
            guard count > 0 else { return 0 }
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + position, byteCount: count) }
            position += count
            return count
        }
    }

    static let symbolicator = Symbolicator(sources: SymbolSources(searchPaths: [], useModulePaths: true, cacheDirectory: nil))

    /// Each stack's frames as (pc, how found), and the modules as (path, build-id, start).
    static func walked(_ core: CoreFile) throws -> (stacks: [[String]], modules: [String]) {
        let report = try symbolicator.report(core: core, path: "core")
        return (report.stacks.map { stack in
            [stack.thread ?? "", "\(stack.crashed)"] + stack.frames.map { "\(String($0.address ?? 0, radix: 16)) \($0.foundBy.map { "\($0)" } ?? "-")" }
        }, report.modules.map { "\($0.path) \($0.buildID ?? "-") \(String($0.loadAddress ?? 0, radix: 16))" })
    }

    @Test("The kept core walks to the same frames, modules and build-ids as the whole core mapped", arguments: names)
    func keptCoreWalksAsTheWholeCore(_ name: String) throws {
        let bytes = try Self.bytes(name)
        let whole = try Self.walked(CoreFile(bytes: bytes))
        let reduced = try StreamedCore.read(from: Self.stream(bytes), limits: StreamedCore.Limits())
        let kept = try Self.walked(reduced.core)
        #expect(kept.stacks == whole.stacks)
        #expect(kept.modules == whole.modules)
        #expect(whole.stacks.allSatisfy { $0.count > 3 })
        #expect(!reduced.truncated && reduced.stacksCut == 0)
        #expect(reduced.bytesRead == UInt64(bytes.count))
        // A fraction of the core is kept.
        #expect(reduced.memoryKept < bytes.count / 4, "\(reduced.memoryKept) of \(bytes.count)")
        #expect(reduced.core.threads == (try CoreFile(bytes: bytes)).threads)
        #expect(reduced.core.signal == (try CoreFile(bytes: bytes)).signal)
    }

    @Test("Reads of 1 to 4,099 bytes at a time keep the same core; stopping early reads less and keeps the same")
    func shortReadsAndStoppingEarly() throws {
        let bytes = try Self.bytes("threads")
        let expected = try StreamedCore.read(from: Self.stream(bytes), limits: StreamedCore.Limits())
        var generator = SplitMix64(seed: 7)
        let short = try StreamedCore.read(from: Self.stream(bytes) { generator.int(1...4099) }, limits: StreamedCore.Limits())
        #expect(try Self.walked(short.core).stacks == Self.walked(expected.core).stacks)
        #expect(short.memoryKept == expected.memoryKept)
        let crash = try Self.bytes("crash-O2")
        let early = try StreamedCore.read(from: Self.stream(crash), limits: StreamedCore.Limits(), readToEnd: false)
        #expect(early.stoppedEarly && !early.truncated)
        #expect(early.bytesRead < UInt64(crash.count))
        #expect(try Self.walked(early.core).stacks == Self.walked(CoreFile(bytes: crash)).stacks)
    }

    @Test("The memory bound holds: stacks are cut (the crashed thread's first), the rest counted", arguments: [0.3, 0.6, 0.9])
    func theMemoryBoundHolds(share: Double) throws {
        let bytes = try Self.bytes("threads")
        let full = try StreamedCore.read(from: Self.stream(bytes), limits: StreamedCore.Limits())
        let bound = Int(Double(full.memoryKept) * share)
        let reduced = try StreamedCore.read(from: Self.stream(bytes), limits: StreamedCore.Limits(memoryBytes: bound))
        #expect(reduced.memoryKept <= bound)
        #expect(reduced.stacksCut > 0, "\(bound) of \(full.memoryKept)")
        // The crashed thread keeps its first frames whatever the bound.
        let stacks = try Self.walked(reduced.core).stacks
        #expect(stacks.first?[1] == "true")
        #expect((stacks.first?.count ?? 0) >= 3)
    }

    @Test("A stack bound smaller than the stack: the walk stops where the kept stack ends, its first frames unchanged")
    func aShortStackKeepsTheTopFrames() throws {
        let bytes = try Self.bytes("crash-O0")
        let whole = try Self.walked(CoreFile(bytes: bytes)).stacks[0]
        let reduced = try StreamedCore.read(from: Self.stream(bytes), limits: StreamedCore.Limits(stackBytes: 64))
        let kept = try Self.walked(reduced.core).stacks[0]
        #expect(kept.count < whole.count)
        #expect(Array(whole.prefix(kept.count - 1)) == Array(kept.prefix(kept.count - 1)))
    }

    @Test("A core cut anywhere, or with bytes flipped in its headers and notes, gives an error or a core, never a trap (seeded)")
    func hostileStreams() throws {
        let bytes = try Self.bytes("crash-O2")
        var generator = SplitMix64(seed: 16)
        var inputs: [[UInt8]] = (0..<40).map { _ in Array(bytes.prefix(generator.int(0...(bytes.count - 1)))) }
        for _ in 0..<60 {
            var flipped = bytes
            for _ in 0..<8 { flipped[generator.int(0...min(bytes.count - 1, 12_000))] ^= UInt8(generator.int(1...255)) }
            inputs.append(flipped)
        }
        var read = 0, refused = 0
        for input in inputs {
            do {
                let reduced = try StreamedCore.read(from: Self.stream(input), limits: StreamedCore.Limits(memoryBytes: 1 << 20))
                #expect(reduced.memoryKept <= 1 << 20)
                read += 1
            } catch {
                refused += 1
            }
        }
        #expect(read > 0 && refused > 0)
        // A cut core past its notes is read, and says it was cut.
        let cut = try StreamedCore.read(from: Self.stream(Array(bytes.prefix(bytes.count - 8192))), limits: StreamedCore.Limits())
        #expect(cut.truncated)
    }

    /// An ELF core header followed by `rest`, with `count` program headers.
    static func forged(phnum: UInt16, rest: [UInt8]) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<4, with: [0x7f, 0x45, 0x4c, 0x46])
        header[4] = 2; header[5] = 1; header[6] = 1; header[16] = 4; header[18] = 62
        header[32] = 64
        header[54] = 56
        header[56] = UInt8(phnum & 0xff); header[57] = UInt8(phnum >> 8)
        return header + rest
    }

    static func programHeader(type: UInt32, offset: UInt64, address: UInt64 = 0, fileSize: UInt64, memorySize: UInt64) -> [UInt8] {
        var entry = [UInt8](repeating: 0, count: 56)
        for (field, value, width) in [(0, UInt64(type), 4), (8, offset, 8), (16, address, 8), (32, fileSize, 8), (40, memorySize, 8)] {
            for byte in 0..<width { entry[field + byte] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte))) }
        }
        return entry
    }

    @Test("Forged headers: huge note sizes, a PN_XNUM table without data, notes over the bound, a thread-less core")
    func forgedHeaders() throws {
        func refuses(_ bytes: [UInt8], _ code: FormatError.Code, limits: StreamedCore.Limits = StreamedCore.Limits()) {
            do {
                _ = try StreamedCore.read(from: Self.stream(bytes), limits: limits)
                Issue.record("accepted")
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
        // A note claiming a 4 GiB name and descriptor inside a 1 TiB segment of a short stream.
        var note = [UInt8](repeating: 0xff, count: 8) + [1, 0, 0, 0]
        note += [UInt8](repeating: 0x41, count: 64)
        refuses(Self.forged(phnum: 1, rest: Self.programHeader(type: 4, offset: 120, fileSize: 1 << 40, memorySize: 0) + note), .truncated)
        // A CORE note whose descriptor passes the memory bound is refused before it is read.
        let big = [5, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0] + Array("CORE\0\0\0\0".utf8)
        refuses(Self.forged(phnum: 1, rest: Self.programHeader(type: 4, offset: 120, fileSize: 1 << 30, memorySize: 0) + big),
                .limitExceeded, limits: StreamedCore.Limits(memoryBytes: 1 << 20))
        // PN_XNUM with no data: the table is read until the stream ends.
        refuses(Self.forged(phnum: 0xffff, rest: [UInt8](repeating: 0, count: 56 * 100)), .truncated)
        // Notes without NT_PRSTATUS: no thread, as the mapped reader says.
        refuses(Self.forged(phnum: 1, rest: Self.programHeader(type: 4, offset: 120, fileSize: 0, memorySize: 0)), .invalidValue)
        // The program headers before byte 64.
        var early = Self.forged(phnum: 1, rest: [])
        early[32] = 8
        refuses(early, .unsupported)
        refuses([0x7f, 0x45, 0x4c], .truncated)
        refuses(Array("not a core at all, but long enough for an ELF header to be read........".utf8), .badMagic)
    }
}
