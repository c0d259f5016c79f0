import Foundation
import Testing

/// Hostile reports to both routes that read reports: a clear 4xx (or, for crashes, a failed crash
/// with the reason), the server stays up and its memory bounded.
@Suite(.serialized)
struct HostileReportTests {
    /// A report file written from `make`.
    static func write(_ server: TestServer, _ name: String, _ bytes: [UInt8]) throws -> String {
        let path = server.scratch + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// An ASan-style report of `frames` frames.
    static func frames(_ count: Int) -> [UInt8] {
        var text = "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
        text.reserveCapacity(count * 60)
        for index in 0..<count {
            text += "    #\(index) 0x7f0000001000 (/usr/lib/libdeep.so+0x\(String(1000 + index, radix: 16)))\n"
        }
        return Array(text.utf8)
    }

    @Test("huge lines, deep JSON, a million frames, binary garbage: 4xx or failed, the server up and bounded")
    func hostile() throws {
        let server = try TestServer()
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) } + [0]
        let hugeLine = Array("==1==ERROR: AddressSanitizer: SEGV\n    #0 0x1 (/lib/a.so+0x1) ".utf8) + [UInt8](repeating: 0x41, count: 3 << 20)
        let deepJSON = Array(String(repeating: "{\"stacks\":[", count: 20000).utf8)
        let deepArray = Array((String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)).utf8)
        let cases: [(String, [UInt8], symbolicate: Int, crash: String)] = [
            ("garbage.bin", garbage, 400, "refused"),
            ("huge-line.txt", hugeLine, 400, "failed"),
            ("deep.json", deepJSON, 400, "failed"),
            ("deep-array.json", deepArray, 400, "failed"),
            ("many-frames.txt", Self.frames(200_000), 400, "failed"),
            ("million-frames.txt", Self.frames(1_000_000), 413, "refused"),
        ]
        for (name, bytes, expected, crashOutcome) in cases {
            let path = try Self.write(server, name, bytes)
            let symbolicated = try server.post("symbolicate", file: path)
            #expect(symbolicated.status == expected, "\(name): \(symbolicated.status) \(symbolicated.text.prefix(300))")
            #expect(symbolicated.errorCode != nil, "\(name): no error body")
            let crash = try server.post("crashes", file: path, query: "wait=25")
            switch crashOutcome {
            case "refused":
                #expect((400..<500).contains(crash.status), "\(name): \(crash.status)")
            default:
                #expect(crash.status == 201, "\(name): \(crash.status) \(crash.text.prefix(300))")
                #expect(crash.json["state"] as? String == "failed", "\(name): \(crash.text)")
                if let id = crash.json["id"] as? String {
                    #expect((try server.crash(id)["failure"] as? String)?.isEmpty == false)
                }
            }
            #expect(try server.request("GET", "/healthz").status == 200, "server down after \(name)")
        }
        // Bounded: the largest body is 16 MiB; a generous ceiling catches unbounded growth.
        let peak = try server.peakResidentKiB()
        #expect(peak < 1_000_000, "peak RSS \(peak) KiB")
    }
}
