import Foundation
import SymAgent
import Testing

/// Precedence (flag > CRASHSYM_* > config file > default) and the config file's checks, in process.
@Suite struct AgentConfigurationTests {
    static func file(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "agent-config-\(UUID().uuidString).json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let full = """
        {"server": "http://file:1", "app-id": "from-file", "app-key": "file-key", "state-dir": "/file/state",
         "version": "1.0", "environment": "file-env", "host": "file-host", "poll": true, "settle-seconds": 0.5,
         "max-queue-mb": 7, "max-reports-per-minute": 9, "log-level": "debug",
         "spools": [{"path": "/s1", "app-id": "spool-app", "version": "2.0", "format": "sanitizer", "environment": "e1"},
                    {"path": "/s2"}]}
        """

    @Test func theFileAloneGivesEverySetting() throws {
        let path = try Self.file(Self.full)
        defer { unlink(path) }
        let configuration = try AgentConfiguration.resolve(flags: .init(), environment: [:], configFile: path)
        #expect(configuration.server == "http://file:1")
        #expect(configuration.appID == "from-file")
        #expect(configuration.appKey == "file-key")
        #expect(configuration.stateDirectory == "/file/state")
        #expect(configuration.version == "1.0")
        #expect(configuration.environment == "file-env")
        #expect(configuration.host == "file-host")
        #expect(configuration.poll)
        #expect(configuration.settle == .milliseconds(500))
        #expect(configuration.maxQueueBytes == 7 << 20)
        #expect(configuration.maxReportsPerMinute == 9)
        #expect(configuration.logLevel == "debug")
        #expect(configuration.spools == [
            .init(path: "/s1", appID: "spool-app", version: "2.0", format: .sanitizer, environment: "e1"), .init(path: "/s2"),
        ])
    }

    @Test func theEnvironmentWinsOverTheFileAndFlagsOverBoth() throws {
        let path = try Self.file(Self.full)
        defer { unlink(path) }
        let environment = ["CRASHSYM_SERVER": "http://env:1", "CRASHSYM_APP_ID": "from-env", "CRASHSYM_APP_KEY": "env-key",
                           "CRASHSYM_STATE_DIR": "/env/state", "CRASHSYM_VERSION": "3.0", "CRASHSYM_ENVIRONMENT": "env-env",
                           "CRASHSYM_SPOOL": "/e1:/e2"]
        let fromEnvironment = try AgentConfiguration.resolve(flags: .init(), environment: environment, configFile: path)
        #expect(fromEnvironment.server == "http://env:1")
        #expect(fromEnvironment.appID == "from-env")
        #expect(fromEnvironment.appKey == "env-key")
        #expect(fromEnvironment.stateDirectory == "/env/state")
        #expect(fromEnvironment.version == "3.0")
        #expect(fromEnvironment.environment == "env-env")
        #expect(fromEnvironment.spools.map(\.path) == ["/e1", "/e2"])

        var flags = AgentConfiguration.Flags()
        flags.server = "http://flag:1"
        flags.appID = "from-flag"
        flags.appKey = "flag-key"
        flags.stateDirectory = "/flag/state"
        flags.version = "4.0"
        flags.environment = "flag-env"
        flags.spools = ["/f"]
        flags.maxQueueMB = 3
        flags.settleSeconds = 0
        let fromFlags = try AgentConfiguration.resolve(flags: flags, environment: environment, configFile: path)
        #expect(fromFlags.server == "http://flag:1")
        #expect(fromFlags.appID == "from-flag")
        #expect(fromFlags.appKey == "flag-key")
        #expect(fromFlags.stateDirectory == "/flag/state")
        #expect(fromFlags.version == "4.0")
        #expect(fromFlags.environment == "flag-env")
        #expect(fromFlags.spools == [.init(path: "/f")])
        #expect(fromFlags.maxQueueBytes == 3 << 20)
        #expect(fromFlags.settle == .zero)
    }

    @Test func theStateDirectoryDefaultsUnderXDGStateHome() throws {
        var flags = AgentConfiguration.Flags()
        flags.server = "http://x:1"
        flags.appID = "a"
        flags.appKey = "k"
        let configuration = try AgentConfiguration.resolve(flags: flags, environment: ["XDG_STATE_HOME": "/xdg", "HOME": "/home/u"],
                                                           configFile: nil)
        #expect(configuration.stateDirectory == (getuid() == 0 ? "/var/lib/crashsym-agent" : "/xdg/crashsym-agent"))
        #expect(configuration.settle == .seconds(2))
        #expect(configuration.maxQueueBytes == 256 << 20)
        #expect(configuration.maxReportsPerMinute == 0)
        #expect(!configuration.poll)
    }

    @Test(arguments: [
        ("{\"poll\": \"yes\"}", "\"poll\" must be true or false"),
        ("{\"settle-seconds\": \"2\"}", "\"settle-seconds\" must be a number"),
        ("{\"spools\": {\"path\": \"/s\"}}", "\"spools\" must be a list"),
        ("{\"spools\": [{\"dir\": \"/s\"}]}", "spools[0]: \"path\" is missing"),
        ("{\"spools\": [{\"path\": \"/s\", \"color\": \"red\"}]}", "spools[0]: unknown setting \"color\""),
        ("{\"server\": 8080}", "\"server\" must be a string"),
        ("{\"server\": \"http://x:1\", \"app-id\": \"bad id!\", \"app-key\": \"k\"}", "app id 'bad id!' must be 1 to 128 characters"),
        ("{\"server\": \"http://x:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"environment\": \"\\u0001\"}", "must be 1 to 255 printable characters"),
        ("{\"server\": \"http://x:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"max-reports-per-minute\": -1}", "max-reports-per-minute must be 0"),
        ("{\"server\": \"http://x:1\", \"app-id\": \"a\"}", "no app key"),
        ("", "not JSON"),
        ("{\"symbols\": \"/tmp\"}", "\"symbols\" must be a list of paths"),
        ("{\"symbols\": [1]}", "symbols[0]: \"symbols\" must be a string"),
        ("{\"server\": \"http://x:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"symbols\": [\"/nonexistent/syms\"]}", "symbols: /nonexistent/syms does not exist"),
    ])
    func aBadFileNamesTheSetting(json: String, message: String) throws {
        let path = try Self.file(json)
        defer { unlink(path) }
        do {
            _ = try AgentConfiguration.resolve(flags: .init(), environment: ["HOME": "/h"], configFile: path)
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
        }
    }

    /// `symbols` from the file; --symbols flags replace the file's list.
    @Test func symbolPathsComeFromTheFileUnlessFlagsGiveThem() throws {
        let path = try Self.file("{\"server\": \"http://x:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"symbols\": [\"/tmp\", \"/\"]}")
        defer { unlink(path) }
        let fromFile = try AgentConfiguration.resolve(flags: .init(), environment: ["HOME": "/h"], configFile: path)
        #expect(fromFile.symbols == ["/tmp", "/"])
        var flags = AgentConfiguration.Flags()
        flags.symbols = ["/usr"]
        let fromFlags = try AgentConfiguration.resolve(flags: flags, environment: ["HOME": "/h"], configFile: path)
        #expect(fromFlags.symbols == ["/usr"])
    }

    @Test func aMissingFileIsNamed() {
        #expect(throws: AgentConfiguration.Problem.self) {
            try AgentConfiguration.resolve(flags: .init(), environment: [:], configFile: "/nonexistent/agent.json")
        }
    }
}
