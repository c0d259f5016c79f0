import Foundation
import Testing
import TestSupport

/// `crashsym agent` runs in its own executable, `crashsym-agent`, next to `crashsym`: the daemon on
/// every app host carries none of the server's libraries (their code and conformance records were
/// most of its resident memory), and neither the lean `crashsym` nor `crashsym-net` carries the agent.
@Suite struct AgentExecutableTests {
    /// The bytes of the executable `name` next to `crashsym`.
    static func executable(_ name: String) throws -> Data {
        let path = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent(name).path
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Whether the executable holds a Swift symbol of `module` (its mangled prefix, `$s7NIOCore`).
    static func contains(_ binary: Data, module: String) -> Bool {
        binary.range(of: Data("$s\(module.utf8.count)\(module)".utf8)) != nil
    }

    @Test func theAgentLinksNoneOfTheServersLibraries() throws {
        let agent = try Self.executable("crashsym-agent")
        #expect(Self.contains(agent, module: "SymAgent"))
        for module in ["NIOCore", "NIOPosix", "Hummingbird", "GRDB", "SymServer", "Mustache"] {
            #expect(!Self.contains(agent, module: module), "crashsym-agent links \(module)")
        }
        // Nor Foundation (about 9 MB resident: ICU data and its conformances), which SymClient's
        // SymBundle (ZIPFoundation) and swift-crypto would bring: FoundationEssentials only.
        for module in ["Foundation", "FoundationInternationalization", "ZIPFoundation", "Crypto", "SymBundle", "SymClient"] {
            #expect(!Self.contains(agent, module: module), "crashsym-agent links \(module)")
        }
        let needed = try Tool.output("/usr/bin/readelf", ["-d", URL(fileURLWithPath: CLI.binary).deletingLastPathComponent()
            .appendingPathComponent("crashsym-agent").path])
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!needed.contains("[\(library)]"), "crashsym-agent needs \(library)")
        }
        #expect(!Self.contains(try Self.executable("crashsym"), module: "SymAgent"))
        #expect(!Self.contains(try Self.executable("crashsym-net"), module: "SymAgent"))
    }

    /// `crashsym agent` is handed over to `crashsym-agent`: its help is the agent's.
    @Test func crashsymHandsAgentOverToCrashsymAgent() throws {
        let help = try CLI.run(["agent", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--symbols <path>"), "\(help.stdout)")
        let direct = try Tool.run(URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("crashsym-agent").path,
                                  ["agent", "--help"])
        #expect(direct.text == help.stdout)
    }
}
