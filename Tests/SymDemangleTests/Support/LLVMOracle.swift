import Foundation

/// LLVM 21's Itanium demangler, asked through the toolchain's `llvm-nm -C`: the names become the
/// symbols of an object assembled by the toolchain's clang, and llvm-nm prints each demangled (or
/// as it is, where LLVM cannot demangle it). The same oracle as `scripts/build-demangle-vectors`.
enum LLVMOracle {
    static let toolchain = ProcessInfo.processInfo.environment["SWIFT_TOOLCHAIN"] ?? "/opt/swift/usr/bin"
    static let nm = toolchain + "/llvm-nm"
    static let clang = toolchain + "/clang"

    /// The version line of the toolchain's llvm-nm (`LLVM version 21.…`).
    static func version() throws -> String {
        let text = try ReferenceTool.run(nm, ["--version"])
        return text.split(separator: "\n").first { $0.contains("LLVM version") }.map(String.init) ?? text
    }

    /// LLVM's demangling of every name (the name itself where LLVM fails), in order. Names must
    /// be non-empty and free of `"` and newlines, as every Itanium name is.
    static func demangle(_ names: [String]) throws -> [String] {
        let directory = ReferenceTool.scratchDirectory.appendingPathComponent("oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let assembly = directory.appendingPathComponent("names.s")
        let object = directory.appendingPathComponent("names.o")
        var text = ".text\n"
        for name in names { text += ".globl \"\(name)\"\n\"\(name)\":\n" }
        try text.write(to: assembly, atomically: true, encoding: .utf8)
        _ = try ReferenceTool.run(clang, ["-c", assembly.path, "-o", object.path])
        let raw = try ReferenceTool.run(nm, ["-p", object.path]).split(separator: "\n")
        let demangled = try ReferenceTool.run(nm, ["-p", "-C", object.path]).split(separator: "\n")
        var answers: [Substring: String] = [:]
        for (mangledLine, demangledLine) in zip(raw, demangled) {
            answers[symbolField(mangledLine)] = String(symbolField(demangledLine))
        }
        return try names.map { name in
            guard let answer = answers[Substring(name)] else { throw ToolError(description: "llvm-nm did not list \(name)") }
            return answer
        }
    }

    /// `(mangled, LLVM's demangling)` of every `_Z` symbol in `library` (its symbol table and its
    /// dynamic symbols), read by running llvm-nm with and without `-C` over it.
    static func symbolPairs(in library: String) throws -> [(String, String)] {
        var pairs: [(String, String)] = []
        for dynamic in [false, true] {
            let options = dynamic ? ["-p", "-D"] : ["-p"]
            let raw = try ReferenceTool.run(nm, options + [library]).split(separator: "\n")
            let demangled = try ReferenceTool.run(nm, options + ["-C", library]).split(separator: "\n")
            guard raw.count == demangled.count else { throw ToolError(description: "llvm-nm line counts differ on \(library)") }
            for (mangledLine, demangledLine) in zip(raw, demangled) {
                let name = symbolField(mangledLine)
                // A versioned dynamic name (`name@VER`) is llvm-nm's splitting, not demangling.
                guard name.hasPrefix("_Z"), !name.contains("@") else { continue }
                pairs.append((String(name), String(symbolField(demangledLine))))
            }
        }
        return pairs
    }

    /// The name in an llvm-nm line (`ADDRESS TYPE NAME`, or `TYPE NAME` when undefined).
    private static func symbolField(_ line: Substring) -> Substring {
        let trimmed = line.drop { $0 == " " }
        var fields = 0
        var index = trimmed.startIndex
        // Address (possibly blank) and type, then the name, which may contain spaces once demangled.
        while index < trimmed.endIndex && fields < (line.first == " " ? 1 : 2) {
            guard let space = trimmed[index...].firstIndex(of: " ") else { break }
            index = trimmed.index(after: space)
            fields += 1
        }
        return trimmed[index...]
    }
}
