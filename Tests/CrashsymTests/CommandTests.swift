import Foundation
import Testing
import TestSupport

/// The `crashsym` binary, run as a user would: exit codes, output formats, errors.
@Suite struct CommandTests {
    @Test func helpListsTheCommands() throws {
        let result = try CLI.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("dump"))
        #expect(result.stdout.contains("lookup"))
    }

    @Test("usage errors exit 2", arguments: [["dump"], ["lookup"], ["dump", "x", "-o", "y", "--jobs", "0"],
                                            ["lookup", "x", "nothex"], ["frobnicate"]])
    func usageErrors(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test func lookupOfAMissingFileFailsWithAClearMessage() throws {
        let result = try CLI.run(["lookup", "/nonexistent/table.csym", "0x1000"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("/nonexistent/table.csym"))
        #expect(result.stderr.contains("cannot open"))
    }

    @Test func dumpWritesOneTablePerBuildID() throws {
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["dump", CLI.fixture("gcc-c-O2-dwarf5"), CLI.fixture("clang-cpp-O2-dwarf5"),
                                  "-o", output, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let buildID = try #require(object["build_id"] as? String)
            #expect(buildID.count == 40)
            #expect(object["arch"] as? String == "x86_64")
            #expect((object["functions"] as? Int ?? 0) > 3)
            #expect((object["line_rows"] as? Int ?? 0) > 10)
            #expect(FileManager.default.fileExists(atPath: "\(output)/\(buildID).csym"))
            let size = try FileManager.default.attributesOfItem(atPath: "\(output)/\(buildID).csym")[.size] as! Int
            #expect(object["size"] as? Int == size)
        }
    }

    @Test func dumpOfADirectorySkipsNonELFAndReportsBrokenELF() throws {
        let input = try CLI.temporaryDirectory(), output = try CLI.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: input)
            try? FileManager.default.removeItem(atPath: output)
        }
        try FileManager.default.copyItem(atPath: CLI.fixture("gcc-c-O0-dwarf4"), toPath: input + "/prog")
        try "just text".write(toFile: input + "/notes.txt", atomically: true, encoding: .utf8)
        var broken = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.fixture("gcc-c-O0-dwarf4"))).prefix(100))
        broken[0] = 0x7f
        try Data(broken).write(to: URL(fileURLWithPath: input + "/broken"))
        let result = try CLI.run(["dump", input, "-o", output])
        #expect(result.status == 1)
        #expect(result.stdout.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("broken"))
        #expect(!result.stderr.contains("notes.txt"))
    }

    @Test func dumpOfAStrippedBinaryUsesItsDebugFileFromDebugDir() throws {
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let without = try CLI.run(["dump", CLI.fixture("stripped-buildid/prog"), "-o", output, "--format", "json"])
        let with = try CLI.run(["dump", CLI.fixture("stripped-buildid/prog"), "-o", output, "--format", "json",
                                "--debug-dir", CLI.fixture("debugdir")])
        #expect(without.status == 0 && with.status == 0, "\(without.stderr) \(with.stderr)")
        let plain = try JSONSerialization.jsonObject(with: Data(without.stdout.utf8)) as! [String: Any]
        let debug = try JSONSerialization.jsonObject(with: Data(with.stdout.utf8)) as! [String: Any]
        #expect(plain["dwarf"] as? Bool == false)
        #expect(debug["dwarf"] as? Bool == true)
        #expect((debug["line_rows"] as? Int ?? 0) > 0)
        #expect((debug["debug_file"] as? String ?? "").hasSuffix(".debug"))
    }

    @Test func dumpOfADebuglinkBinaryFindsTheFileNextToIt() throws {
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["dump", CLI.fixture("debuglink/prog"), "-o", output, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as! [String: Any]
        #expect(object["dwarf"] as? Bool == true)
        #expect((object["debug_file"] as? String ?? "").hasSuffix("prog.debug"))
    }

    @Test func lookupJSONHasOneObjectPerAddressInOrderAndAgreesWithTheTable() throws {
        let output = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: output) }
        let elf = CLI.fixture("gcc-c-O2-dwarf5")
        let table = try CLI.dumpTable(elf, into: output).table
        let addresses = ["0x1", "0xffffffffffff", "0x" + String(try functionAddress(elf, "main") + 4, radix: 16)]
        let fromTable = try CLI.run(["lookup", table, "--format", "json"], input: addresses.joined(separator: "\n"))
        let fromELF = try CLI.run(["lookup", elf, "--format", "json"] + addresses)
        #expect(fromTable.status == 0, "\(fromTable.stderr)")
        #expect(fromTable.stdout == fromELF.stdout)
        let lines = fromTable.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        for (line, address) in zip(lines, addresses) {
            let answer = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            #expect(answer["address"] as? String == address)
        }
        let last = try JSONSerialization.jsonObject(with: Data(lines[2].utf8)) as! [String: Any]
        let frames = try #require(last["frames"] as? [[String: Any]])
        #expect(frames.last?["function"] as? String == "main")
        #expect(frames.last?["inlined"] as? Bool == false)
        let file = frames.last?["file"] as? String ?? ""
        #expect(file.hasSuffix(".c"), "\(file)")
        let first = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as! [String: Any]
        #expect((first["frames"] as? [Any])?.isEmpty == true)
    }

    @Test func lookupAnswersEveryValidLineInOrderAndReportsTheOthers() throws {
        let elf = CLI.fixture("gcc-c-O2-dwarf5")
        let main = "0x" + String(try functionAddress(elf, "main") + 4, radix: 16)
        // More lines than one batch, blank and bad lines among them, CRLF, and no final newline.
        var lines: [String] = []
        for index in 0..<5000 { lines.append(index % 3 == 0 ? main : "0x\(String(index, radix: 16))") }
        lines.insert("", at: 10)
        lines.insert("nothex", at: 4200)
        lines.insert("  \(main)\r", at: 4201)
        let result = try CLI.run(["lookup", elf], input: lines.joined(separator: "\n"))
        #expect(result.status == 1)
        #expect(result.stderr == "crashsym: not a hex address: 'nothex'\n")
        let answers = result.stdout.split(separator: "\n").filter { $0.hasPrefix("0x") }
        let expected = lines.filter { !$0.isEmpty && $0 != "nothex" }
            .map { "0x" + String(UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst(2), radix: 16)!, radix: 16) }
        #expect(answers.map(String.init) == expected)
        // Every address of main answers the same frames, whichever batch it fell in.
        let blocks = result.stdout.components(separatedBy: main + "\n").dropFirst().map { $0.prefix { $0 != "0" } }
        #expect(Set(blocks).count == 1)
        #expect(blocks.first?.contains("main") == true)
    }

    /// A function's address from `nm`.
    func functionAddress(_ path: String, _ name: String) throws -> UInt64 {
        let text = try Tool.output("/usr/bin/nm", ["--defined-only", path])
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3 && parts[2] == name, let value = UInt64(parts[0], radix: 16) { return value }
        }
        throw CocoaError(.fileReadUnknown)
    }
}
