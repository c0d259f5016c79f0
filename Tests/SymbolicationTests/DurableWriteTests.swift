import Foundation
import SymBytes
import Testing
@testable import Symbolication

/// The durable write (FileIO) as its callers use it: each failure names its step, a scratch file
/// that belongs to another writer is left alone, and `FileSystem.writeAtomically` keeps its
/// messages.
@Suite struct DurableWriteTests {
    static func scratchDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "crashsym-durable-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func writesAndReplacesWholeFiles() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/table"
        try FileSystem.writeAtomically(Array("first".utf8), to: path)
        try FileSystem.writeAtomically(Array("second".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second")
        // No scratch file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["table"])
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o644)
    }

    @Test func eachFailureNamesItsStep() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A source that is not there cannot be flushed.
        #expect(FileIO.moveDurably(directory + "/absent", to: directory + "/x") == FileIO.DurableFailure(.syncFile, ENOENT))
        // A destination directory that is not there: the rename fails, the source stays.
        let source = directory + "/source"
        FileManager.default.createFile(atPath: source, contents: Data("bytes".utf8))
        #expect(FileIO.moveDurably(source, to: directory + "/missing/x") == FileIO.DurableFailure(.rename, ENOENT))
        #expect(FileManager.default.fileExists(atPath: source))
        // An exclusive scratch name already taken: another writer's file, left as it was.
        #expect(FileIO.writeDurably(Array("new".utf8), to: directory + "/y", scratch: source, exclusive: true)
            == FileIO.DurableFailure(.create, EEXIST))
        #expect(try String(contentsOfFile: source, encoding: .utf8) == "bytes")
        // Without `exclusive` the scratch file is replaced and moved into place.
        #expect(FileIO.writeDurably(Array("new".utf8), to: directory + "/y", scratch: source, exclusive: false) == nil)
        #expect(try String(contentsOfFile: directory + "/y", encoding: .utf8) == "new")
        #expect(!FileManager.default.fileExists(atPath: source))
        // The Int32 forms give the same errno.
        #expect(FileIO.durablyRename(directory + "/absent", to: directory + "/x") == ENOENT)
    }

    @Test func writeAtomicallyKeepsItsMessages() throws {
        let directory = try Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A file where a directory should be: the temporary file cannot be created.
        FileManager.default.createFile(atPath: directory + "/file", contents: Data())
        do {
            try FileSystem.writeAtomically([1, 2, 3], to: directory + "/file/table")
            Issue.record("writing under a file succeeded")
        } catch {
            #expect(error.message.hasPrefix("cannot create: Not a directory"), "\(error.message)")
            #expect(error.path?.hasPrefix(directory + "/file/table.tmp-") == true)
        }
        // A directory in the way of the rename: the write fails and no scratch file remains.
        try FileManager.default.createDirectory(atPath: directory + "/dir/inner", withIntermediateDirectories: true)
        do {
            try FileSystem.writeAtomically([1, 2, 3], to: directory + "/dir")
            Issue.record("renaming over a non-empty directory succeeded")
        } catch {
            #expect(error.message.hasPrefix("cannot write: "), "\(error.message)")
            #expect(error.path == directory + "/dir")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["dir", "file"])
    }
}
