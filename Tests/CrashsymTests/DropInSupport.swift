import Foundation
import TestSupport

/// Running the reference tools (binutils addr2line, the toolchain's llvm-symbolizer, clang) and
/// crashsym side by side for the drop-in tests.
enum DropIn {
    static let llvmSymbolizer = "/opt/swift/usr/bin/llvm-symbolizer"
    static let binutilsAddr2line = "/usr/bin/addr2line"
    static let elfutilsAddr2line = "/usr/bin/eu-addr2line"
    static let clang = "/opt/swift/usr/bin/clang"
    static let clangxx = "/opt/swift/usr/bin/clang++"

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `executable` with `arguments` and `input` on its standard input (see `Tool.run`).
    static func run(_ executable: String, _ arguments: [String], input: String = "",
                    environment: [String: String] = [:]) throws -> Output {
        let run = try Tool.run(executable, arguments, input: Data(input.utf8), environment: environment)
        return Output(status: run.status, stdout: run.text, stderr: run.stderr)
    }

    /// Addresses inside the `STT_FUNC` symbols of `path` (per `readelf -sW`), every `stride` bytes.
    static func functionAddresses(_ path: String, stride: UInt64 = 3) throws -> [UInt64] {
        let listing = try run("/usr/bin/readelf", ["-sW", path]).stdout
        var addresses = Set<UInt64>()
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[3] == "FUNC", fields[6] != "UND",
                  let start = UInt64(fields[1], radix: 16) else { continue }
            let sizeText = fields[2]
            let size = sizeText.hasPrefix("0x") ? UInt64(sizeText.dropFirst(2), radix: 16) : UInt64(sizeText)
            guard let size, size < 1 << 20 else { continue }
            var address = start
            while address < start + size {
                addresses.insert(address)
                address += stride
            }
        }
        return addresses.sorted()
    }

    /// `path`'s data objects (`STT_OBJECT` with a size), as `(address, name)`.
    static func dataObjects(_ path: String) throws -> [(UInt64, String)] {
        let listing = try run("/usr/bin/readelf", ["-sW", path]).stdout
        var objects: [(UInt64, String)] = []
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[3] == "OBJECT", fields[6] != "UND", fields[2] != "0",
                  let start = UInt64(fields[1], radix: 16) else { continue }
            objects.append((start, String(fields[7])))
        }
        return objects
    }

    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

    /// Lines that differ, as a readable list (at most `limit`), for failure messages.
    static func differences(_ expected: [Substring], _ actual: [Substring], limit: Int = 8) -> String {
        var lines: [String] = []
        if expected.count != actual.count { lines.append("line counts \(expected.count) vs \(actual.count)") }
        for (index, (left, right)) in zip(expected, actual).enumerated() where left != right {
            lines.append("line \(index + 1): expected \"\(left)\" got \"\(right)\"")
            if lines.count >= limit { break }
        }
        return lines.joined(separator: "\n")
    }

    /// A symbolic link named `name` to the crashsym binary, in a fresh directory.
    static func link(named name: String) throws -> (directory: String, path: String) {
        let directory = try CLI.temporaryDirectory()
        let path = directory + "/" + name
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: CLI.binary)
        return (directory, path)
    }
}
