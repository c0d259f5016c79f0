import Foundation
import TestSupport
import Testing

/// `crashsym lookup` on large inputs: the parallel path must print exactly what one thread prints.
@Suite struct LookupCommandTests {
    /// The functions of `path` (start, size) from `nm -S`.
    static func functions(_ path: String) throws -> [(start: UInt64, size: UInt64)] {
        let text = try Tool.output("/usr/bin/nm", ["-S", "--defined-only", path])
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 4, parts[2] == "t" || parts[2] == "T",
                  let start = UInt64(parts[0], radix: 16), let size = UInt64(parts[1], radix: 16), size > 0 else { return nil }
            return (start, size)
        }
    }

    /// 60,000 lines: addresses inside the fixture's functions (several times each, in every
    /// spelling the command accepts), addresses outside them, blank and invalid lines; no final
    /// newline.
    static func input(for path: String, seed: UInt64) throws -> String {
        let functions = try functions(path)
        #expect(functions.count > 3)
        var generator = SplitMix64(seed: seed)
        var lines: [String] = []
        for index in 0..<60_000 {
            switch UInt64.random(in: 0..<100, using: &generator) {
            case 0: lines.append("")
            case 1: lines.append("not-an-address-\(index)")
            case 2: lines.append("0x\(String(UInt64.random(in: 0..<0x1000, using: &generator), radix: 16))")
            case 3: lines.append("  0X\(String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 16, uppercase: true))\r")
            default:
                let function = functions[Int.random(in: 0..<functions.count, using: &generator)]
                let address = function.start + UInt64.random(in: 0..<function.size, using: &generator)
                lines.append(index % 2 == 0 ? "0x\(String(address, radix: 16))" : String(address, radix: 16))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Runs `crashsym lookup` through a shell with standard input from `input` and both output
    /// streams into one file, so the file shows the order in which the two were written.
    static func run(_ arguments: [String], input: String) throws -> (status: Int32, output: Data) {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let quoted = ([CLI.binary, "lookup"] + arguments).map { "'\($0)'" }.joined(separator: " ")
        process.arguments = ["-c", "\(quoted) < \"$1\" > \"$2\" 2>&1", "sh", input, "\(directory)/output"]
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, try Data(contentsOf: URL(fileURLWithPath: "\(directory)/output")))
    }

    @Test("threads print what one thread prints, errors in place",
          arguments: ["clang-cpp-O2-dwarf5", "gcc-c-O2-dwarf5", "swift-O"])
    func parallelOutputIsByteIdenticalToSequential(_ fixture: String) throws {
        let elf = CLI.fixture(fixture)
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let table = try CLI.dumpTable(elf, into: directory).table
        let inputPath = "\(directory)/addresses.txt"
        let text = try Self.input(for: elf, seed: 7)
        try text.write(toFile: inputPath, atomically: true, encoding: .utf8)
        for format in ["text", "json"] {
            let sequential = try Self.run([table, "--format", format, "--jobs", "1"], input: inputPath)
            #expect(sequential.status == 1)  // the invalid lines
            let output = String(decoding: sequential.output, as: UTF8.self)
            // Every line answered or reported, in input order.
            // (Bytes, not Characters: "\r\n" is one Character, which a split on "\n" would not cut.)
            let invalid = text.utf8.split(separator: 0x0a, omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasPrefix("not-") }
            let reported = output.split(separator: "\n").filter { $0.hasPrefix("crashsym: not a hex address") }
            #expect(reported.count == invalid.count)
            #expect(reported.first == "crashsym: not a hex address: '\(invalid.first ?? "")'")
            for jobs in ["2", "3"] {
                let parallel = try Self.run([table, "--format", format, "--jobs", jobs], input: inputPath)
                #expect(parallel.status == 1)
                #expect(parallel.output == sequential.output, "\(fixture) \(format) --jobs \(jobs) differs from --jobs 1")
            }
        }
    }

    /// `--no-demangle` prints the names llvm-symbolizer prints with `--no-demangle`, frame by frame.
    @Test(arguments: ["clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5"])
    func noDemangleMatchesLLVMSymbolizer(_ fixture: String) throws {
        let elf = CLI.fixture(fixture)
        var generator = SplitMix64(seed: 11)
        let addresses = try Self.functions(elf).flatMap { function in
            (0..<3).map { _ in "0x" + String(function.start + UInt64.random(in: 0..<function.size, using: &generator), radix: 16) }
        }
        let ours = try CLI.run(["lookup", elf, "--format", "json", "--no-demangle"], input: addresses.joined(separator: "\n"))
        #expect(ours.status == 0, "\(ours.stderr)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/opt/swift/usr/bin/llvm-symbolizer")
        // Addresses on standard input: one JSON object per line (on the command line, one array).
        process.arguments = ["--no-demangle", "--inlining", "--output-style=JSON", "--obj=\(elf)"]
        let pipe = Pipe(), input = Pipe()
        process.standardOutput = pipe
        process.standardInput = input
        try process.run()
        // Written from another thread, so neither side waits on a full pipe.
        let text = Data(addresses.joined(separator: "\n").utf8)
        let writer = Thread {
            input.fileHandleForWriting.write(text)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let theirs = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let ourLines = ours.stdout.split(separator: "\n"), theirLines = theirs.split(separator: "\n")
        try #require(ourLines.count == addresses.count && theirLines.count == addresses.count)
        var mangledSeen = false
        for (our, their) in zip(ourLines, theirLines) {
            let ourObject = try JSONSerialization.jsonObject(with: Data(our.utf8)) as! [String: Any]
            let theirObject = try JSONSerialization.jsonObject(with: Data(their.utf8)) as! [String: Any]
            let ourNames = (ourObject["frames"] as? [[String: Any]] ?? []).map { $0["function"] as? String ?? "" }
            let theirNames = (theirObject["Symbol"] as? [[String: Any]] ?? []).map { $0["FunctionName"] as? String ?? "" }
            #expect(ourNames == theirNames, "\(ourObject["address"] ?? "")")
            if ourNames.contains(where: { $0.hasPrefix("_Z") }) { mangledSeen = true }
        }
        #expect(mangledSeen)
    }

    @Test func anAddressOnAPipeIsAnsweredBeforeTheNextIsWritten() throws {
        let elf = CLI.fixture("gcc-c-O2-dwarf5")
        let functions = try Self.functions(elf)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["lookup", elf]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // A hung lookup would hang the test: kill it after a generous delay.
        let watchdog = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
        defer { watchdog.cancel() }
        for function in functions.prefix(3) {
            let address = "0x" + String(function.start, radix: 16)
            input.fileHandleForWriting.write(Data((address + "\n").utf8))
            var answer = ""
            // The answer is the address line and at least one frame line.
            while answer.split(separator: "\n").count < 2 {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { break }
                answer += String(decoding: data, as: UTF8.self)
            }
            #expect(answer.hasPrefix(address + "\n"), "no answer to \(address) while the pipe stays open")
        }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
