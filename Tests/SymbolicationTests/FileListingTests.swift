import Foundation
import Testing
@testable import Symbolication

/// `FileSystem.files(under:)`, which lists the reports of `crashsym symbolicate DIR`: regular
/// files at any depth in sorted order, links to files included, links to directories not
/// followed, whether the type comes from readdir or from stat.
@Suite struct FileListingTests {
    @Test func regularFilesInSortedOrderLinksToDirectoriesNotFollowed() throws {
        let root = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let manager = FileManager.default
        for folder in ["b", "a/deep", "c"] { try manager.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true) }
        for file in ["z.txt", "b/2.txt", "b/10.txt", "a/deep/x.log", "a/1.txt"] {
            try "report\n".write(toFile: root + "/" + file, atomically: false, encoding: .utf8)
        }
        try manager.createSymbolicLink(atPath: root + "/c/link.txt", withDestinationPath: root + "/z.txt")
        try manager.createSymbolicLink(atPath: root + "/c/loop", withDestinationPath: root)
        try manager.createSymbolicLink(atPath: root + "/c/dangling", withDestinationPath: root + "/missing")
        #expect(mkfifo(root + "/fifo", 0o600) == 0)
        // Regular files and links to them (not the fifo, the dangling link or the loop), in byte
        // order: a directory's files, then its subdirectories' in turn, depth first.
        #expect(FileSystem.files(under: root) == [
            "z.txt", "a/1.txt", "a/deep/x.log", "b/10.txt", "b/2.txt", "c/link.txt",
        ].map { root + "/" + $0 })
        #expect(FileSystem.files(under: root + "/").first == root + "/z.txt")
        #expect(FileSystem.files(under: root + "/missing").isEmpty)
    }
}
