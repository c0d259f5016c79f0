import Foundation
import Testing
import TestSupport

/// A core without an image's first page names the build from the file on disk only when that file
/// agrees with the core: its `NT_FILE` mappings' places in the file's segments, its size, and the
/// read-only pages the core holds.
extension CoreFileCommandTests {
    /// Runs a copy of `program` as `work/app` under `coredump_filter` `filter` (no address
    /// randomisation) and returns its core (the kernel's, else gdb's, which honours the filter).
    static func core(of program: String, filter: String, in work: String) throws -> String {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: program, toPath: work + "/app")
        _ = try Tool.run("/bin/sh", ["-c", "cd '\(work)' && echo \(filter) > /proc/self/coredump_filter && ulimit -c unlimited && "
                                     + "(setarch $(uname -m) -R ./app || true) >/dev/null 2>&1; "
                                     + "ls core* >/dev/null 2>&1 || gdb -q -nx -batch -ex 'set startup-with-shell off' -ex run "
                                     + "-ex 'generate-core-file \(work)/core' ./app >/dev/null 2>&1"])
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: work).first { $0.hasPrefix("core") })
        return work + "/" + name
    }

    /// The core's `PT_LOAD` segments that start at one of `addresses` lose their bytes (`p_filesz`
    /// 0): the core then lacks those images' first pages and keeps the rest. Returns how many.
    static func dropSegments(at addresses: Set<UInt64>, of core: String) throws -> Int {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: core)))
        func word(_ offset: Int, _ size: Int) -> UInt64 { (0..<size).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) } }
        let table = Int(word(32, 8)), entrySize = Int(word(54, 2)), count = Int(word(56, 2))
        var dropped = 0
        for index in 0..<count where word(table + index * entrySize, 4) == 1 && addresses.contains(word(table + index * entrySize + 16, 8)) {
            for byte in 0..<8 { bytes[table + index * entrySize + 32 + byte] = 0 }
            dropped += 1
        }
        try Data(bytes).write(to: URL(fileURLWithPath: core))
        return dropped
    }

    /// `crashsym symbolicate core --format json`'s modules by name, and the first stack's frames.
    static func symbolicatedCore(_ core: String, cache: String) throws -> (modules: [String: [String: Any]], frames: [[String: Any]]) {
        let run = try CLI.run(["symbolicate", core, "--format", "json", "--cache-dir", cache])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let modules = (document["modules"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) { $0[$1["name"] as? String ?? ""] = $1 }
        let frames = try #require((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        return (modules, frames)
    }

    static func functionNames(_ frames: [[String: Any]]) -> [String] {
        frames.map { (($0["symbolized"] as? [[String: Any]])?.first?["function"] as? String) ?? "??" }
    }

    @Test("A core holding the images' text but not their first pages: the files on disk pass (their read-only pages equal the core's); another build of the program is refused by its bytes, with the reason")
    func diskImageComparedWithTheCoresPages() throws {
        let directory = try Self.cores.get()
        let work = directory + "/disk-pages-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: work) }
        // Anonymous and file-backed private memory: the images' text and rodata are in the core.
        let core = try Self.core(of: directory + "/crash-O2", filter: "0x27", in: work)
        let whole = try Self.symbolicatedCore(core, cache: directory + "/cache")
        let images = whole.modules.values.filter { ($0["path"] as? String)?.hasPrefix("/") == true }
        #expect(images.count >= 3)
        #expect(images.allSatisfy { $0["build_id"] is String }, "the core keeps the first pages: build-ids from memory")
        let starts = Set(images.compactMap { ($0["load_address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } })
        #expect(try Self.dropSegments(at: starts, of: core) == images.count)

        // The right files: every build-id is its file's, the frames as before.
        let verified = try Self.symbolicatedCore(core, cache: directory + "/cache")
        for image in images {
            let path = image["path"] as? String ?? ""
            #expect(verified.modules[image["name"] as? String ?? ""]?["build_id"] as? String == (try Self.readelfBuildID(path)), "\(path)")
        }
        #expect(Array(Self.functionNames(verified.frames).prefix(4)) == ["leaf", "middle", "top", "main"])

        // crash-O0 maps the same ranges as crash-O2 (readelf -l): only the bytes tell them apart.
        try FileManager.default.removeItem(atPath: work + "/app")
        try FileManager.default.copyItem(atPath: directory + "/crash-O0", toPath: work + "/app")
        let other = try Self.symbolicatedCore(core, cache: directory + "/cache")
        #expect(other.modules["app"]?["build_id"] is NSNull, "another build's id was taken")
        #expect(other.modules["libc.so.6"]?["build_id"] as? String == (try Self.readelfBuildID(images.first { $0["name"] as? String == "libc.so.6" }?["path"] as? String ?? "")))
        let appFrames = other.frames.filter { $0["module"] as? String == "app" }
        #expect(!appFrames.isEmpty)
        for frame in appFrames {
            #expect(frame["status"] as? String == "no-symbols")
            #expect((frame["symbolized"] as? [Any])?.isEmpty == true, "named from the wrong file")
            let reason = frame["reason"] as? String ?? ""
            #expect(reason.hasPrefix("file on disk does not match the core's mappings: the core's bytes at 0x"), "\(reason)")
            #expect(reason.hasSuffix("differ from the file's"), "\(reason)")
        }
        // The module object carries the refusal as a value: its code, the frames' message, the file.
        let refusal = try #require(other.modules["app"]?["refusal"] as? [String: Any], "\(other.modules["app"] ?? [:])")
        #expect(refusal["code"] as? String == "mapping-mismatch")
        #expect(refusal["message"] as? String == appFrames.first?["reason"] as? String)
        #expect(refusal["path"] as? String == work + "/app")
        #expect(other.modules["libc.so.6"]?["refusal"] == nil, "a verified module has no refusal")
        // --explain says it too.
        let explained = try CLI.run(["symbolicate", core, "--explain", "--cache-dir", directory + "/cache"])
        #expect(explained.stdout.contains("tried: module path \(work)/app: file on disk does not match the core's mappings"), "\(explained.stdout)")
    }

    @Test("A core without the images' first pages or text: a file on disk cut short is refused with the reason (readable or not as ELF), the right one named")
    func diskImageCutShortRefused() throws {
        let directory = try Self.cores.get()
        let work = directory + "/disk-short-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: work) }
        let core = try Self.core(of: directory + "/crash-O2", filter: "0x23", in: work)
        let right = try Self.symbolicatedCore(core, cache: directory + "/cache")
        #expect(right.modules["app"]?["build_id"] as? String == (try Self.readelfBuildID(work + "/app")))
        #expect(Array(Self.functionNames(right.frames).prefix(4)) == ["leaf", "middle", "top", "main"])

        let original = try Data(contentsOf: URL(fileURLWithPath: work + "/app"))
        // Cut at 0x2100, inside the read-only data segment (crash-O2's third PT_LOAD, 0x2000 + 0x130),
        // without a section table so that it still reads as ELF: refused by its size.
        var headers = [UInt8](original.prefix(0x2100))
        for byte in 40..<48 { headers[byte] = 0 }  // e_shoff
        for byte in 60..<64 { headers[byte] = 0 }  // e_shnum, e_shstrndx
        try Data(headers).write(to: URL(fileURLWithPath: work + "/app"))
        let short = try Self.symbolicatedCore(core, cache: directory + "/cache")
        #expect(short.modules["app"]?["build_id"] is NSNull)
        let reason = short.frames.first?["reason"] as? String ?? ""
        #expect(reason.hasPrefix("file on disk does not match the core's mappings: the file is 8448 bytes, the mapping at 0x"), "\(reason)")
        #expect(reason.hasSuffix("needs its bytes up to offset 0x2130"), "\(reason)")
        let shortRefusal = short.modules["app"]?["refusal"] as? [String: Any]
        #expect(shortRefusal?["code"] as? String == "mapping-mismatch" && shortRefusal?["message"] as? String == reason, "\(shortRefusal ?? [:])")
        #expect(Self.functionNames(short.frames).first == "??")

        // Cut in half: not even readable as ELF any more (its section table is gone).
        try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: work + "/app"))
        let half = try Self.symbolicatedCore(core, cache: directory + "/cache")
        #expect(half.modules["app"]?["build_id"] is NSNull)
        let halfReason = half.frames.first?["reason"] as? String ?? ""
        #expect(halfReason.hasPrefix("file on disk does not match the core's mappings: it is not a readable ELF file"), "\(halfReason)")
        let halfRefusal = half.modules["app"]?["refusal"] as? [String: Any]
        #expect(halfRefusal?["code"] as? String == "unreadable-image" && halfRefusal?["message"] as? String == halfReason, "\(halfRefusal ?? [:])")
        #expect(halfRefusal?["path"] as? String == work + "/app")
        #expect(right.modules["app"]?["refusal"] == nil, "the right file is not refused")
    }
}
