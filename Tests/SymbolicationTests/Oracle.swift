import Foundation
import TestSupport

/// Runs the toolchain's llvm-symbolizer, the project's oracle for symbolication.
enum LLVMSymbolizer {
    static let path = "/opt/swift/usr/bin/llvm-symbolizer"

    /// One frame as llvm-symbolizer prints it in JSON.
    struct Frame: Equatable, CustomStringConvertible {
        var function: String
        var file: String
        var line: Int
        var column: Int

        var description: String { "\(function) \(file):\(line):\(column)" }
    }

    /// Symbolizes `addresses` in `object` with inlining and no demangling, in one process.
    static func symbolize(object: String, addresses: [UInt64], extraArguments: [String] = []) throws -> [[Frame]] {
        let text = addresses.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n"
        let data = try Tool.run(path, ["--obj=\(object)", "--inlining", "--output-style=JSON", "--no-demangle"] + extraArguments,
                                input: Data(text.utf8)).stdout
        var results: [[Frame]] = []
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let object = try JSONSerialization.jsonObject(with: Data(line)) as! [String: Any]
            let symbols = object["Symbol"] as? [[String: Any]] ?? []
            results.append(symbols.map {
                Frame(function: $0["FunctionName"] as? String ?? "", file: $0["FileName"] as? String ?? "",
                      line: $0["Line"] as? Int ?? 0, column: $0["Column"] as? Int ?? 0)
            })
        }
        return results
    }
}

/// Paths of committed fixtures and system corpora.
enum Corpus {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static func fixture(_ relative: String) -> String { root.appendingPathComponent("Fixtures/elf/" + relative).path }
    static let python = "/usr/bin/python3.11d"

    /// libc's separate debug file from libc6-dbg, found through libc.so.6's build-id.
    static var libcDebugFile: String? {
        for candidate in ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"] {
            guard let handle = FileHandle(forReadingAtPath: candidate) else { continue }
            defer { try? handle.close() }
            let data = handle.readDataToEndOfFile()
            // NT_GNU_BUILD_ID note: namesz 4, descsz 20, type 3, "GNU\0".
            let pattern = Data([4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 0x47, 0x4e, 0x55, 0])
            guard let range = data.range(of: pattern) else { continue }
            let id = data[range.upperBound..<range.upperBound + 20].map { String(format: "%02x", $0) }.joined()
            let path = "/usr/lib/debug/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        return nil
    }
}
