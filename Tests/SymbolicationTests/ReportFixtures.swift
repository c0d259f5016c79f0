import Foundation
import SymReport
@testable import Symbolication
import TestSupport

/// The crash reports and fixture programs of Fixtures/reports (see its README).
enum ReportFixtures {
    static func path(_ name: String) -> String { Corpus.root.appendingPathComponent("Fixtures/reports/" + name).path }
    static var binaries: String { path("src") }

    static func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    /// Sources that see only the committed fixture binaries: no module paths, no system debug
    /// directory, no cache — so results do not depend on this machine.
    static func isolatedSources(_ searchPaths: [String] = [binaries], cache: String? = nil,
                                debugDirectories: [String] = []) -> SymbolSources {
        SymbolSources(searchPaths: searchPaths, useModulePaths: false,
                      locator: DebugFileLocator(debugDirectories: debugDirectories, includeSystemDirectory: false),
                      cacheDirectory: cache)
    }

    /// Fixture modules: frames in these are compared with llvm-symbolizer.
    static let fixtureModules: Set<String> = ["prog", "prog-nopie", "libfault.so", "prog-asan", "libfault-asan.so", "crash-swift", "libnative.so",
                                                   "sanitizers-ubsan", "sanitizers-tsan", "sanitizers-asan"]

    /// The committed file of a fixture module.
    static func object(for name: String) -> String {
        name == "libnative.so" ? Corpus.fixture("libnative-android21-aarch64.so") : binaries + "/" + name
    }

    /// The page-aligned virtual address of the first PT_LOAD of an ELF file, from readelf.
    static func firstLoadAddress(_ file: String) throws -> UInt64 {
        let text = try Tool.output("/usr/bin/readelf", ["-lW", file])
        for line in text.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasPrefix("LOAD ") {
            let fields = line.split(separator: " ")
            guard fields.count > 2, let address = UInt64(fields[2].dropFirst(2), radix: 16) else { break }
            return address & ~0xfff
        }
        throw CocoaError(.fileReadCorruptFile)
    }

    /// Runs a tool and returns its exit status.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        try Tool.run(tool, arguments).status
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "crashsym-symbolicate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

extension LLVMSymbolizer.Frame {
    init(_ location: SourceLocation) {
        self.init(function: location.mangled, file: location.file, line: Int(location.line), column: Int(location.column))
    }
}
