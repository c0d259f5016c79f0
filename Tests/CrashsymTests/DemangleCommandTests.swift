import Foundation
import Synchronization
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
    /// crashsym demangle`). What is checked is an order, not a speed: each answer arrives while
    /// standard input is still open, and the second line is written only after the first answer
    /// came. A command that buffers its output until the end of input answers nothing until a
    /// watchdog closes standard input (after minutes, only so that such a command cannot hang the
    /// test), and the test then fails whatever the machine's speed.
    @Test(.timeLimit(.minutes(10))) func streamsLineByLine() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["demangle"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let stdin = StandardInputGuard(input.fileHandleForWriting)
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.streamingWatchdog) { stdin.closeUnlessAnswered() }
        var received = Data()
        /// Reads until `count` lines have arrived (or the output ends).
        func readLines(_ count: Int) {
            while received.count(where: { $0 == UInt8(ascii: "\n") }) < count {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                received.append(chunk)
            }
        }
        for (index, name) in ["_Z3foov", "_Z3barv"].enumerated() {
            #expect(stdin.write("line \(index) \(name)\n"), "standard input was closed by the watchdog before line \(index) was answered")
            readLines(index + 1)
            #expect(stdin.notClosedByWatchdog(), "line \(index) was answered only after standard input was closed: output is buffered")
        }
        #expect(String(decoding: received, as: UTF8.self) == "line 0 foo()\nline 1 bar()\n")
        stdin.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// How long the streaming test waits for an answer before closing standard input itself.
    static let streamingWatchdog: DispatchTimeInterval = .seconds(300)

    /// A valid Swift name of `levels` nested dictionaries, each level's key and value the
    /// previous level by substitution: its printed text doubles with each level (2^30 levels of
    /// it would be gigabytes; before the bound, 24 levels never finished).
    static func nestedSubstitutions(_ levels: Int) -> String {
        var name = "$sSaySiG"
        for level in 0..<levels {
            let reference = level < 26 ? "A" + String(UnicodeScalar(UInt8(65 + level))) : level == 26 ? "A_" : "A\(level - 27)_"
            name += "SDy\(reference)\(reference)G"
        }
        return name + "N"
    }

    /// A hostile Swift name, as an argument and in text, finishes and is printed unchanged;
    /// standard error says once why.
    @Test func hostileSwiftNameIsPrintedUnchanged() throws {
        let name = Self.nestedSubstitutions(30)
        let (arguments, text) = try HangGuard.run(within: 300, "crashsym demangle of a hostile Swift name") {
            (try CLI.run(["demangle", name, name]), try CLI.run(["demangle"], input: "at \(name)+0x10\n_Z3foov\n"))
        }
        #expect(arguments.status == 0)
        #expect(arguments.stdout == "\(name)\n\(name)\n")
        #expect(arguments.stderr.hasPrefix("crashsym demangle: 2 Swift names left mangled: 2 "), "\(arguments.stderr)")
        #expect(arguments.stderr.count(where: { $0 == "\n" }) == 1)
        #expect(text.status == 0)
        #expect(text.stdout == "at \(name)+0x10\nfoo()\n")
        #expect(text.stderr.contains("1 Swift name left mangled"), "\(text.stderr)")
    }

    /// `crashsym dump` of an ELF file whose function has a hostile Swift name finishes quickly,
    /// and its table names the function mangled (before the bound, 21 levels took over a minute).
    @Test func dumpOfAHostileSwiftSymbolFinishes() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = Self.nestedSubstitutions(30)
        let source = "void hostile(void) __asm__(\"\(name)\");\nvoid hostile(void) {}\nint main(void) { hostile(); return 0; }\n"
        try source.write(toFile: directory + "/t.c", atomically: true, encoding: .utf8)
        let build = try Tool.run(DropIn.clang, ["-g", "-O0", "-Wl,--build-id=sha1", "t.c", "-o", "t"],
                                 directory: URL(fileURLWithPath: directory))
        try #require(build.status == 0, "\(build.stderr)")
        let symbols = try Tool.run("/usr/bin/nm", [directory + "/t"]).text
        let address = try #require(symbols.split(separator: "\n").first { $0.hasSuffix(" " + name) }?.split(separator: " ").first)
        let lookup = try HangGuard.run(within: 300, "crashsym dump and lookup of a hostile Swift symbol") {
            let table = try CLI.dumpTable(directory + "/t", into: directory + "/out").table
            return try CLI.run(["lookup", table, "0x" + address, "--format", "json"])
        }
        #expect(lookup.status == 0, "\(lookup.stderr)")
        #expect(lookup.stdout.contains("\"function\":\"\(name)\""), "\(lookup.stdout)")
    }
}

/// The write end of a child's standard input, closed once, by the test or by its watchdog,
/// whichever comes first; it remembers whether the watchdog had to.
final class StandardInputGuard: Sendable {
    private let state: Mutex<(handle: FileHandle?, closedByWatchdog: Bool)>

    init(_ handle: FileHandle) { state = Mutex((handle, false)) }

    /// Writes `text` unless standard input is already closed; false when it was.
    func write(_ text: String) -> Bool {
        state.withLock { state in
            guard let handle = state.handle else { return false }
            handle.write(Data(text.utf8))
            return true
        }
    }

    /// True while the watchdog has not closed standard input.
    func notClosedByWatchdog() -> Bool { state.withLock { !$0.closedByWatchdog } }

    /// The watchdog: closes standard input if the test has not.
    func closeUnlessAnswered() {
        state.withLock { state in
            guard let handle = state.handle else { return }
            try? handle.close()
            state = (nil, true)
        }
    }

    /// The test's own close at the end.
    func close() {
        state.withLock { state in
            try? state.handle?.close()
            state.handle = nil
        }
    }
}
