import ArgumentParser
import CrashsymCommandLine
import Foundation
import Logging
import SymBundle
import SymBytes
import SymClient
import SymELF
import Symbolication

/// Target platform of a bundle.
enum UploadPlatform: String, ExpressibleByArgument, CaseIterable {
    case linux
    case android

    /// Any case: Bugly's uploader spells it `Android`.
    init?(argument: String) {
        self.init(rawValue: argument.lowercased())
    }
}

extension Crashsym {
    /// `crashsym upload`: the post-build step (find ELF files, convert what the server lacks, bundle, upload).
    struct Upload: ParsableCommand {
        static let defaultServer = "http://127.0.0.1:8080"

        static let configuration = CommandConfiguration(
            abstract: "Convert ELF binaries into symbol tables, bundle them and upload what the server lacks.",
            discussion: """
                Every ELF file under the paths is identified by its GNU build-id (a stripped binary and its debug \
                file are one module; duplicates are skipped). The server is asked which build-ids it lacks for the \
                app (that also links the present ones to this version); only those are converted and uploaded, in \
                bundles of at most --max-bundle-size MiB of uncompressed files each. Uploads are streamed from disk \
                and retried with backoff on connection errors, 429 and 5xx until --timeout.

                With --no-upload, or -o without -u, every module is converted and the bundle is only written (as \
                Bugly's tool does); --bundle FILE uploads such a bundle later. A bundle over the size bound is split into NAME-1.zip, NAME-2.zip, ….

                App id, app key and server: a flag wins over the environment (CRASHSYM_APP_ID, CRASHSYM_APP_KEY, \
                CRASHSYM_SERVER), which wins over the config file (--config FILE, default \
                $XDG_CONFIG_HOME/crashsym/config.json holding {"server": …, "app-id": …, "app-key": …}: the flag \
                names, as in `crashsym serve`'s config file; the older "app_id" and "app_key" are still read, with a \
                note), which wins over the default server \(defaultServer). The key is never printed; a password in \
                the server URL is shown as ***. The app id is the id `crashsym apps create` printed (not the app's name).

                A module the server has is uploaded again when these files would improve it (DWARF where the stored \
                table has none, a debug file where none is stored); it is then reported `improved`. Modules whose \
                table has no DWARF (names only) or no symbols at all are warned about; --strict makes them fail.

                Bugly's spellings are accepted: the legacy jar's -i PATH -u -id ID -key KEY -package P -version V \
                -o out.zip -symbol, and the current uploader's -appid ID -appkey KEY -bundleid P -version V \
                -platform Android -inputSymbol PATH (-inputMapping, for Java mapping files, is accepted and ignored \
                with a warning).

                Exit status: 0 when every module arrived (or the bundle was written), 1 when any failed, 2 usage.

                Examples:
                  crashsym upload build/out --app-id demo --app-key "$KEY" --version 1.4.2
                  crashsym upload build/out --app-id demo --version 1.4.2 -o syms.zip
                  crashsym upload -i libs -u -id demo -key "$KEY" -version 1.4.2 -symbol
                  crashsym upload -appid demo -appkey "$KEY" -bundleid com.example.app -version 1.4.2 -platform Android -inputSymbol libs
                """
        )

        @Argument(help: ArgumentHelp("ELF files or directories (searched recursively).", valueName: "path"))
        var paths: [String] = []

        @Option(name: [.customShort("i"), .customLong("inputSymbol", withSingleDash: true)],
                help: ArgumentHelp("An ELF file or directory (Bugly spellings; repeatable).", valueName: "path"))
        var inputs: [String] = []

        @Option(name: .customLong("inputMapping", withSingleDash: true),
                help: ArgumentHelp("Accepted for Bugly compatibility and ignored with a warning (Java mapping files are not native symbols).",
                                   valueName: "file"))
        var inputMapping: [String] = []

        @Option(name: [.customLong("app-id"), .customLong("id", withSingleDash: true), .customLong("appid", withSingleDash: true)],
                help: ArgumentHelp("Application id, as printed by `crashsym apps create` (else CRASHSYM_APP_ID, else the config file).",
                                   valueName: "id"))
        var appID: String?

        @Option(name: [.customLong("app-key"), .customLong("key", withSingleDash: true), .customLong("appkey", withSingleDash: true)],
                help: ArgumentHelp("Application key (else CRASHSYM_APP_KEY, else the config file).", valueName: "key"))
        var appKey: String?

        @Option(name: [.customLong("version"), .customLong("version", withSingleDash: true)],
                help: ArgumentHelp("Application version the symbols belong to ([A-Za-z0-9._+-]; with --bundle, checked against the bundle's).",
                                   valueName: "version"))
        var version: String?

        @Option(name: [.customLong("package"), .customLong("package", withSingleDash: true), .customLong("bundleid", withSingleDash: true)],
                help: ArgumentHelp("Package / bundle identifier (at most 255 bytes, no control characters).", valueName: "package"))
        var package: String = ""

        @Option(name: [.customLong("platform"), .customLong("platform", withSingleDash: true)], help: "Platform: linux or android (any case).")
        var platform: UploadPlatform = .linux

        @Option(help: ArgumentHelp("Server base URL (else CRASHSYM_SERVER, else the config file, else \(defaultServer)).",
                                   valueName: "url"))
        var server: String?

        @Option(name: [.customShort("o"), .customLong("output")],
                help: ArgumentHelp("Keep the bundle at this path (without -u: write it only, upload nothing).", valueName: "bundle.zip"))
        var output: String?

        @Flag(name: .customShort("u"), help: "Upload (Bugly spelling): with -o, write the bundle and upload it.")
        var upload = false

        @Flag(name: .customLong("no-upload"), help: "Only write the bundle given with -o; contact no server.")
        var noUpload = false

        @Flag(name: .customLong("symbol", withSingleDash: true), help: "Accepted for Bugly compatibility (symbol tables are always built).")
        var symbol = false

        @Flag(name: .customLong("include-debug"), help: "Also put each module's original debug file into the bundle (for debuginfod).")
        var includeDebug = false

        @Flag(help: "Fail modules whose table has no DWARF (function names only) or no symbols at all, instead of warning.")
        var strict = false

        @Option(help: ArgumentHelp("JSON config file (default $XDG_CONFIG_HOME/crashsym/config.json).", valueName: "file"))
        var config: String?

        @Option(name: .customLong("bundle"),
                help: ArgumentHelp("Upload this bundle, written earlier with -o, as it is (repeatable; no paths then).",
                                   valueName: "bundle.zip"))
        var bundles: [String] = []

        @Option(name: .customLong("max-bundle-size"), help: ArgumentHelp("Bound on the uncompressed files per bundle, in MiB.", valueName: "MiB"))
        var maxBundleSize: Int = 256

        @Option(help: ArgumentHelp("Overall deadline of the command, in seconds.", valueName: "seconds"))
        var timeout: Int = 3600

        @Option(help: "Output format: text (one line per module and a total) or json (one object per line).")
        var format: OutputFormat = .text

        @Option(name: .shortAndLong, help: "Files converted in parallel (default: number of cores).")
        var jobs: Int?

        @OptionGroup var debug: DebugOptions

        /// Whether this run talks to a server.
        var uploads: Bool { !bundles.isEmpty || (!noUpload && (output == nil || upload)) }

        func validate() throws {
            if maxBundleSize < 1 || maxBundleSize > 1 << 30 { throw ValidationError("--max-bundle-size must be between 1 and 2^30 MiB") }
            if timeout < 1 || timeout > 30 * 86400 { throw ValidationError("--timeout must be between 1 and 2592000 seconds (30 days)") }
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
            if !bundles.isEmpty {
                if !paths.isEmpty || !inputs.isEmpty { throw ValidationError("--bundle uploads bundles as they are: give no paths") }
                if output != nil || noUpload { throw ValidationError("--bundle cannot be combined with -o or --no-upload") }
                if let version { try Self.check(version: version) }
                return
            }
            if paths.isEmpty && inputs.isEmpty { throw ValidationError("no input: give paths or -i PATH") }
            if noUpload && upload { throw ValidationError("--no-upload and -u contradict each other") }
            if noUpload && output == nil { throw ValidationError("--no-upload needs -o bundle.zip") }
            guard let version, !version.isEmpty else { throw ValidationError("--version is required") }
            try Self.check(version: version)
            guard BundleManifest.isPackage(package) else {
                throw ValidationError("--package must be at most 255 bytes without control characters")
            }
        }

        /// The version rule of the server, applied before any work.
        static func check(version: String) throws {
            guard BundleManifest.isVersion(version) else {
                throw ValidationError("--version '\(InputPreview.quote(version))' must be 1 to 128 characters of [A-Za-z0-9._+-], "
                    + "not starting with a dot")
            }
        }

        func run() throws {
            let start = ContinuousClock.now
            let environment = ProcessInfo.processInfo.environment
            let file: UploadConfigFile
            switch UploadConfigFile.load(explicit: config, environment: environment) {
            case .success(let loaded):
                file = loaded
            case .failure(let error):
                FileOutput.standardError("crashsym: \(error.message)\n")
                throw ExitCode.failure
            }
            for note in file.notes { FileOutput.standardError("crashsym: \(note)\n") }
            for mapping in inputMapping {
                FileOutput.standardError("crashsym: warning: -inputMapping \(mapping) ignored: crashsym uploads native (ELF) symbols, "
                    + "not Java mapping files\n")
            }
            let settings = UploadSettings(
                appID: appID ?? environment["CRASHSYM_APP_ID"] ?? file.appID,
                appKey: appKey ?? environment["CRASHSYM_APP_KEY"] ?? file.appKey,
                server: server ?? environment["CRASHSYM_SERVER"] ?? file.server ?? Self.defaultServer)
            guard let resolvedAppID = settings.appID, !resolvedAppID.isEmpty else {
                throw ValidationError("no app id: give --app-id, CRASHSYM_APP_ID or app-id in the config file")
            }
            guard BundleManifest.isIdentifier(resolvedAppID) else {
                throw ValidationError("app id '\(InputPreview.quote(resolvedAppID))' must be 1 to 128 characters of [A-Za-z0-9._-] "
                    + "(the id printed by `crashsym apps create`)")
            }
            if uploads && (settings.appKey ?? "").isEmpty {
                throw ValidationError("no app key: give --app-key, CRASHSYM_APP_KEY or app-key in the config file")
            }
            LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
            var dumpConfiguration = DumpConfiguration(outputDirectory: "", locator: debug.locator, decoder: debug.decoder)
            if let jobs { dumpConfiguration.jobs = jobs }
            let flow = UploadFlow(
                inputs: paths + inputs, appID: resolvedAppID, appKey: settings.appKey ?? "", server: settings.server,
                metadata: BundleMetadata(appID: resolvedAppID, package: package, version: version ?? "",
                                         platform: platform.rawValue, tool: "crashsym \(CrashsymVersion.current)"),
                output: output, uploads: uploads, includeDebug: includeDebug, strict: strict,
                maximumBundleSize: UInt64(maxBundleSize) << 20, deadline: start + .seconds(timeout),
                dump: dumpConfiguration, logger: Logger(label: "crashsym.upload"))
            let summary = bundles.isEmpty ? flow.run() : flow.upload(bundles: bundles, version: version)
            for warning in summary.warnings { FileOutput.standardError("crashsym: warning: \(warning)\n") }
            for error in summary.errors { FileOutput.standardError("crashsym: \(error)\n") }
            FileOutput.standardOutput(format == .json ? summary.json() : summary.text(uploads: uploads))
            if !summary.succeeded { throw ExitCode.failure }
        }
    }
}

/// App id, key and server after precedence (flag > environment > config file > default).
struct UploadSettings {
    var appID: String?
    var appKey: String?
    var server: String
}

/// `config.json`: `{"server": …, "app-id": …, "app-key": …}`, every field optional. The keys are the
/// flag names, as in `crashsym serve`'s config file; `app_id` and `app_key` (the spelling before
/// 0.2) are still read, with a deprecation note.
struct UploadConfigFile {
    var server: String?
    var appID: String?
    var appKey: String?
    /// Deprecation notes to print.
    var notes: [String] = []

    /// The keys, and the deprecated spelling of each.
    static let keys = ["server", "app-id", "app-key"]
    static let deprecatedKeys = ["app_id": "app-id", "app_key": "app-key"]

    struct LoadError: Error {
        var message: String
    }

    /// The explicit file (which must exist), else the default one if it exists, else nothing.
    static func load(explicit: String?, environment: [String: String]) -> Result<UploadConfigFile, LoadError> {
        let path: String
        if let explicit {
            path = explicit
        } else {
            let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? environment["HOME"].map { $0 + "/.config" }
            guard let base else { return .success(UploadConfigFile()) }
            path = base + "/crashsym/config.json"
            guard FileManager.default.fileExists(atPath: path) else { return .success(UploadConfigFile()) }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(LoadError(message: "\(path): cannot read the config file"))
        }
        let expected = "expected {\"server\": …, \"app-id\": …, \"app-key\": …}"
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return .failure(LoadError(message: "\(path): not a JSON object (\(expected))"))
        }
        var file = UploadConfigFile()
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let name: String
            if let current = deprecatedKeys[key] {
                name = current
                file.notes.append("\(path): \"\(key)\" is deprecated, write \"\(current)\" (the flag's name)")
            } else if keys.contains(key) {
                name = key
            } else {
                return .failure(LoadError(message: "\(path): unknown setting \"\(key)\" (\(expected))"))
            }
            guard let text = value as? String else {
                return .failure(LoadError(message: "\(path): \"\(key)\" must be a string"))
            }
            switch name {
            case "server": file.server = text
            case "app-id": if file.appID == nil || key == name { file.appID = text }
            default: if file.appKey == nil || key == name { file.appKey = text }
            }
        }
        return .success(file)
    }
}
