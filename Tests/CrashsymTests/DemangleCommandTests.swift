import Foundation
import Testing
import TestSupport

/// `crashsym demangle` through the built binary: names as arguments, text on standard input
/// (streamed), JSON, `--swift-names` and `--no-params`, against `c++filt` and `swift-demangle`.
@Suite struct DemangleCommandTests {
    static let names = Self.fixtureNames("cxx.txt") + Self.fixtureNames("cxx-current.txt") + Self.fixtureNames("swift-sugar.txt")

    static func fixtureNames(_ list: String) -> [String] {
        let text = (try? String(contentsOf: CLI.root.appendingPathComponent("Fixtures/demangle/" + list), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// The toolchain's `swift-demangle`.
    static func toolchainBinary(_ name: String) -> String {
        let toolchain = ProcessInfo.processInfo.environment["SWIFT_TOOLCHAIN"] ?? "/opt/swift/usr/bin"
        return toolchain + "/" + name
    }

    /// What the peer tool of each name's language prints for it.
    static func peerAnswers(_ names: [String]) throws -> [String] {
        try names.map { name in
            if name.hasPrefix("$s") || name.hasPrefix("_$s") {
                return try Tool.run(Self.toolchainBinary("swift-demangle"), ["--compact", name]).text
                    .trimmingCharacters(in: .newlines)
            }
            return try Tool.run("/usr/bin/c++filt", [name]).text.trimmingCharacters(in: .newlines)
        }
    }

    /// Names as arguments: one line each, as the language's own tool prints them. (Names with an
    /// ELF symbol version, `name@GLIBCXX_3.4`, are left out: `c++filt` leaves them whole, crashsym
    /// demangles the name and keeps the version after it, as `nm -C` does.)
    @Test func argumentsMatchPeers() throws {
        let unversioned = Self.names.filter { !$0.contains("@") }
        let names = Array(unversioned.prefix(60)) + Array(unversioned.suffix(40))
        let result = try CLI.run(["demangle"] + names)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(lines == (try Self.peerAnswers(names)))
    }

    /// Standard input: every name in the text replaced in place, the rest untouched.
    @Test func standardInputIsFilteredInPlace() throws {
        let names = Self.names.filter { !$0.contains("@") }
        let input = names.map { "  at \($0)+0x10 (libx.so)\n" }.joined() + "no names\n" + "last line without newline"
        let result = try CLI.run(["demangle"], input: input)
        #expect(result.status == 0, "\(result.stderr)")
        let expected = try Self.peerAnswers(names).map { "  at \($0)+0x10 (libx.so)\n" }.joined()
            + "no names\n" + "last line without newline"
        #expect(result.stdout == expected)
    }

    /// `--format json`: one object per name, with its language; null where nothing demangles.
    @Test func json() throws {
        let result = try CLI.run(["demangle", "--format", "json", "_ZN2fp5brainEDF16b", "$s5sugar6MatrixV2atySdSgSi_SitF",
                                  "_RNvCs1234_5krate3fun", "main"])
        #expect(result.status == 0)
        let objects = try result.stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(objects.count == 4)
        #expect(objects[0]["demangled"] as? String == "fp::brain(std::bfloat16_t)" && objects[0]["language"] as? String == "c++")
        #expect(objects[1]["demangled"] as? String == "sugar.Matrix.at(Swift.Int, Swift.Int) -> Swift.Double?")
        #expect(objects[1]["language"] as? String == "swift")
        #expect(objects[2]["demangled"] as? String == "krate::fun" && objects[2]["language"] as? String == "rust")
        #expect(objects[3]["demangled"] is NSNull && objects[3]["language"] is NSNull && objects[3]["mangled"] as? String == "main")
        // Standard input in JSON: each line is one name.
        let piped = try CLI.run(["demangle", "--format", "json"], input: "_Z3foov\r\nzz\n")
        #expect(piped.stdout == #"{"mangled":"_Z3foov","demangled":"foo()","language":"c++"}"# + "\n"
            + #"{"mangled":"zz","demangled":null,"language":null}"# + "\n")
    }

    /// `--swift-names simplified` is `swift-demangle --simplified`; `--no-params` is `c++filt -p`.
    @Test func namingOptions() throws {
        let swift = "$s5sugar6MatrixV2atySdSgSi_SitF"
        let simplified = try CLI.run(["demangle", "--swift-names", "simplified", swift])
        let theirs = try Tool.run(Self.toolchainBinary("swift-demangle"), ["--simplified", "--compact", swift]).text
        #expect(simplified.stdout == theirs)
        #expect(simplified.stdout == "Matrix.at(_:_:)\n")
        let cxx = "_ZN2fp5boxedENS_3BoxIDF16bEENS0_IDF16_EEPDF16b"
        let noParams = try CLI.run(["demangle", "--no-params", cxx])
        #expect(noParams.stdout == (try Tool.run("/usr/bin/c++filt", ["-p", cxx]).text))
        #expect(try CLI.run(["demangle", "--swift-names", "short", swift]).status == 2)
    }

    /// A line is printed as soon as it is read, before standard input ends (`tail -f log |
    /// crashsym demangle`).
    @Test(.timeLimit(.minutes(1))) func streamsLineByLine() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["demangle"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        input.fileHandleForWriting.write(Data("first _Z3foov\n".utf8))
        // Read what arrives while standard input is still open.
        var received = Data()
        while !received.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            received.append(chunk)
        }
        #expect(String(decoding: received, as: UTF8.self) == "first foo()\n")
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
