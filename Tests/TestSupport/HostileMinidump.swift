import Foundation

/// Hostile variants of a minidump (the reference one of `../shared/reference/minidump-linux/`),
/// built from its own directory (the stream directory at the header's RVA, 12 bytes an entry:
/// type, size, RVA): for the server's upload tests and the CLI's.
public enum HostileMinidump {
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// What is wrong with the variant.
    public enum Kind: Sendable {
        /// A thread list of `count` copies of the one thread (the same stack and context).
        case threads(Int)
        /// A memory list of `count` ranges over the stack, each overlapping the next, every one
        /// pointing at the stack's bytes.
        case overlappingMemory(Int)
        /// A memory range whose bytes lie past the end of the file.
        case memoryOutsideFile
        /// Every 16 bytes of the stack a saved frame pointer that points at itself and a return
        /// address after a call in `crash_linux` (0x40207a): a frame-pointer chain that loops, a
        /// return address at every step of a scan.
        case loopingStack
        /// `count` threads whose stack is the thread list itself.
        case stackOnThreadList(Int)
    }

    /// The minidump at `path` (the reference one: a thread list, a memory list) made hostile.
    public static func bytes(_ kind: Kind, from path: String) throws -> Data {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u64(_ at: Int) -> UInt64 { UInt64(u32(at)) | UInt64(u32(at + 4)) << 32 }
        func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
        let count = u32(8), directory = u32(12)
        func entry(_ type: Int) throws -> Int {
            guard let index = (0..<count).first(where: { u32(directory + 12 * $0) == type }) else { throw Failure(message: "no stream \(type) in \(path)") }
            return directory + 12 * index
        }
        /// Points the stream of `type` at `payload`, appended to the file.
        func replace(_ type: Int, with payload: [UInt8]) throws {
            let at = try entry(type)
            let rva = bytes.count
            bytes += payload
            bytes.replaceSubrange((at + 4)..<(at + 12), with: le32(payload.count) + le32(rva))
        }
        let threadList = u32(try entry(3) + 8)
        let thread = Array(bytes[(threadList + 4)..<(threadList + 52)])
        let stackStart = u64(threadList + 4 + 24)
        let stackSize = u32(threadList + 4 + 32), stackRVA = u32(threadList + 4 + 36)
        switch kind {
        case .threads(let copies):
            var payload = le32(copies)
            payload.reserveCapacity(4 + 48 * copies)
            for _ in 0..<copies { payload += thread }
            try replace(3, with: payload)
        case .overlappingMemory(let ranges):
            var payload = le32(ranges)
            for index in 0..<ranges { payload += le64(stackStart + UInt64(index % 64) * 8) + le32(stackSize / 2) + le32(stackRVA) }
            try replace(5, with: payload)
        case .memoryOutsideFile:
            try replace(5, with: le32(1) + le64(stackStart) + le32(4096) + le32(bytes.count + 100))
        case .loopingStack:
            for offset in stride(from: 0, to: stackSize - 15, by: 16) {
                bytes.replaceSubrange((stackRVA + offset)..<(stackRVA + offset + 16), with: le64(stackStart + UInt64(offset)) + le64(0x40_207a))
            }
        case .stackOnThreadList(let copies):
            var entry = thread
            let listRVA = bytes.count
            entry.replaceSubrange(32..<40, with: le32(4 + 48 * copies) + le32(listRVA))
            var payload = le32(copies)
            for _ in 0..<copies { payload += entry }
            try replace(3, with: payload)
        }
        return Data(bytes)
    }
}
