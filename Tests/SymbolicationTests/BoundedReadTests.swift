import Foundation
import SymBytes
import Testing

/// `FileIO.readAll(_:count:at:)`, the one bounded pread loop: whole reads, reads at an offset, reads
/// that meet the end of the file, and failures as values; and its pair `FileIO.writeAll(_:_:at:)`.
@Suite struct BoundedReadTests {
    static func file(_ bytes: [UInt8]) throws -> (path: String, descriptor: Int32) {
        let path = NSTemporaryDirectory() + "crashsym-read-" + UUID().uuidString
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        return (path, descriptor)
    }

    @Test("reads what is asked, from the offset, and fewer bytes only at the end of the file")
    func boundedByCountAndEnd() throws {
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (path, descriptor) = try Self.file(content)
        defer {
            close(descriptor)
            unlink(path)
        }
        #expect(try FileIO.readAll(descriptor, count: content.count, at: 0) == content)
        #expect(try FileIO.readAll(descriptor, count: 10, at: 1000) == Array(content[1000..<1010]))
        #expect(try FileIO.readAll(descriptor, count: 100, at: UInt64(content.count - 40)) == Array(content.suffix(40)))
        #expect(try FileIO.readAll(descriptor, count: 100, at: UInt64(content.count)) == [])
        #expect(try FileIO.readAll(descriptor, count: 100, at: UInt64(content.count) + 5000) == [])
        #expect(try FileIO.readAll(descriptor, count: 0, at: 0) == [])
        // pread leaves the file position alone.
        #expect(lseek(descriptor, 0, SEEK_CUR) == 0)
    }

    @Test("a failed read is its errno")
    func failuresAreValues() throws {
        let directory = open(NSTemporaryDirectory(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(directory >= 0)
        defer { close(directory) }
        #expect(throws: FileIO.ReadFailure(code: EISDIR, bytesRead: 0)) { try FileIO.readAll(directory, count: 16, at: 0) }
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        #expect(throws: FileIO.ReadFailure(code: ESPIPE, bytesRead: 0)) { try FileIO.readAll(ends[0], count: 16, at: 0) }
        #expect(throws: FileIO.ReadFailure(code: EBADF, bytesRead: 0)) { try FileIO.readAll(-1, count: 16, at: 0) }
    }

    @Test("a positional write-all puts every byte at the offset, leaves the file position alone, and fails as an errno")
    func positionalWriteAll() throws {
        let (path, descriptor) = try Self.file(Array("0123456789".utf8))
        close(descriptor)
        defer { unlink(path) }
        let writable = open(path, O_RDWR | O_CLOEXEC)
        try #require(writable >= 0)
        defer { close(writable) }
        let large = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(Array("ab".utf8).withUnsafeBytes { FileIO.writeAll(writable, $0, at: 3) } == 0)
        #expect(large.withUnsafeBytes { FileIO.writeAll(writable, $0, at: 12) } == 0)
        #expect(lseek(writable, 0, SEEK_CUR) == 0)
        #expect(try FileIO.readAll(writable, count: 12, at: 0) == Array("012ab56789".utf8) + [0, 0])
        #expect(try FileIO.readAll(writable, count: large.count + 1, at: 12) == large)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        #expect(Array("x".utf8).withUnsafeBytes { FileIO.writeAll(ends[1], $0, at: 0) } == ESPIPE)
        #expect(Array("x".utf8).withUnsafeBytes { FileIO.writeAll(writable, $0, at: UInt64(off_t.max)) } == EFBIG)
    }
}
