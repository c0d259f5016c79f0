import ArgumentParser
import CrashsymCommandLine
import Foundation
import Logging
import SymBundle
import SymBytes
import SymClient

extension Crashsym {
    /// `crashsym upload-minidump`: sends a minidump the way Crashpad's handler does.
    struct UploadMinidump: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-minidump",
            abstract: "Send a minidump to a crashsym server the way Crashpad does (gzip'd multipart form).",
            discussion: """
                The minidump goes to POST /api/v1/apps/APP/minidump as the form part upload_file_minidump, each \
                --annotation as a text part (the server keeps them with the crash: `ver` is the crash's version, \
                `prod` its product), the whole body gzip-compressed (--no-gzip sends it as it is). The server walks \
                the minidump's stacks with the CFI of the app's uploaded symbols, symbolicates and groups it; the crash \
                id it answers is printed on standard output. The same minidump sent twice answers the same id.

                App id, app key and server are found as `crashsym upload` finds them: flag, else CRASHSYM_APP_ID, \
                CRASHSYM_APP_KEY, CRASHSYM_SERVER, else the config file, else \(Upload.defaultServer).

                Exit status: 0 sent (the id printed), 1 failure, 2 usage.

                Example:
                  crashsym upload-minidump crash.dmp --app-id demo --app-key "$KEY" --annotation prod=demo --annotation ver=1.4.2
                """
        )

        @Argument(help: ArgumentHelp("The minidump file (it starts with MDMP).", valueName: "file"))
        var file: String

        @Option(name: .customLong("app-id"), help: ArgumentHelp("Application id, as printed by `crashsym apps create` (else CRASHSYM_APP_ID, else the config file).", valueName: "id"))
        var appID: String?

        @Option(name: .customLong("app-key"), help: ArgumentHelp("The app's upload key (else CRASHSYM_APP_KEY, else the config file).", valueName: "key"))
        var appKey: String?

        @Option(help: ArgumentHelp("Server base URL (else CRASHSYM_SERVER, else the config file, else \(Upload.defaultServer)).", valueName: "url"))
        var server: String?

        @Option(name: .customLong("annotation"), help: ArgumentHelp("An annotation sent with the minidump, as Crashpad sends the app's (repeatable; `ver` sets the crash's version, `prod` its product).", valueName: "key=value"))
        var annotations: [String] = []

        @Flag(name: .customLong("no-gzip"), help: "Send the form uncompressed (Breakpad's HTTPUpload does; Crashpad compresses).")
        var noGzip = false

        @Option(help: ArgumentHelp("JSON config file (default $XDG_CONFIG_HOME/crashsym/config.json).", valueName: "file"))
        var config: String?

        @Option(help: ArgumentHelp("Overall deadline, retries included, in seconds.", valueName: "seconds"))
        var timeout: Int = 300

        func validate() throws {
            for annotation in annotations {
                guard let equals = annotation.firstIndex(of: "="), equals != annotation.startIndex else {
                    throw ValidationError("--annotation '\(InputPreview.quote(annotation))' must be key=value with a non-empty key")
                }
            }
            guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
        }

        func run() throws {
            let start = ContinuousClock.now
            let environment = ProcessInfo.processInfo.environment
            let configFile: UploadConfigFile
            switch UploadConfigFile.load(explicit: config, environment: environment) {
            case .success(let loaded): configFile = loaded
            case .failure(let error):
                FileOutput.standardError("crashsym: \(error.message)\n")
                throw ExitCode.failure
            }
            for note in configFile.notes { FileOutput.standardError("crashsym: \(note)\n") }
            guard let appID = appID ?? environment["CRASHSYM_APP_ID"] ?? configFile.appID, BundleManifest.isIdentifier(appID) else {
                throw ValidationError("no valid app id: give --app-id (the id `crashsym apps create` printed), CRASHSYM_APP_ID or app-id in the config file")
            }
            guard let key = appKey ?? environment["CRASHSYM_APP_KEY"] ?? configFile.appKey, !key.isEmpty else {
                throw ValidationError("no app key: give --app-key, CRASHSYM_APP_KEY or app-key in the config file")
            }
            let server = server ?? environment["CRASHSYM_SERVER"] ?? configFile.server ?? Upload.defaultServer
            guard let data = FileManager.default.contents(atPath: file) else {
                FileOutput.standardError("crashsym: cannot read \(file)\n")
                throw ExitCode.failure
            }
            let bytes = Array(data)
            guard bytes.count >= 4, bytes[0..<4].elementsEqual("MDMP".utf8) else {
                FileOutput.standardError("crashsym: \(file) is not a minidump (it does not start with MDMP)\n")
                throw ExitCode.failure
            }
            let pairs = annotations.map { text -> (key: String, value: String) in
                let equals = text.firstIndex(of: "=")!
                return (String(text[..<equals]), String(text[text.index(after: equals)...]))
            }
            LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
            do {
                let client = try SymbolClient(
                    configuration: ClientConfiguration(server: server, appID: appID, appKey: key,
                                                       userAgent: "crashsym/\(CrashsymVersion.current)",
                                                       deadline: start + .seconds(timeout)),
                    logger: Logger(label: "crashsym.upload-minidump"))
                let name = file.split(separator: "/").last.map(String.init) ?? "upload.dmp"
                let id = try client.uploadMinidump(MinidumpUpload(minidump: bytes, filename: name, annotations: pairs, gzip: !noGzip))
                FileOutput.standardOutput(id + "\n")
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
        }
    }
}
