import CrashsymCommandLine
import Foundation
import Logging
import SymBundle
import SymBytes
import SymClient
import SymELF
import Symbolication

/// One module found among the inputs: the files sharing a build-id (a binary and its debug file).
struct DiscoveredModule {
    var buildID: String
    var name: String
    var arch: String
    var files: [String]
    /// Whether one of its files carries DWARF (told to the server, which says whether that would
    /// improve what it has).
    var hasDWARF = false
}

/// What happened to each module of an `upload` run, printed at the end.
struct UploadSummary {
    enum Outcome {
        case uploaded
        /// The server had the build-id; this upload gave it a richer table or the missing debug file.
        case improved
        case alreadyPresent
        case written
        /// A failure of this module alone (its reason is printed on its line).
        case failed(String)
        /// Not done because the run or the module's bundle failed: the reason is one of `errors`,
        /// printed once in text (JSON repeats it per module).
        case abandoned(String)
    }

    struct Entry {
        /// Build-id, or nil for an input that has none (then `name` is its path).
        var buildID: String?
        var name: String
        var outcome: Outcome
    }

    var entries: [Entry] = []
    /// Bundles kept on disk (`-o`).
    var bundles: [WrittenBundle] = []
    /// Failures of the whole run or of a whole bundle, each printed once on standard error.
    var errors: [String] = []
    /// Warnings printed on standard error.
    var warnings: [String] = []

    var succeeded: Bool {
        errors.isEmpty && !entries.isEmpty && !entries.contains {
            switch $0.outcome {
            case .failed, .abandoned: true
            default: false
            }
        }
    }

    /// One JSON object per line: each module (`status` uploaded, improved, already_present, written
    /// or failed, with `reason`), then each kept bundle (`bundle`, `modules`, `size`).
    func json() -> String {
        var text = ""
        for entry in entries {
            var writer = JSONWriter()
            writer.beginObject()
            if let buildID = entry.buildID { writer.field("build_id", buildID) } else { writer.fieldNull("build_id") }
            writer.field("name", entry.name)
            switch entry.outcome {
            case .uploaded: writer.field("status", "uploaded")
            case .improved: writer.field("status", "improved")
            case .alreadyPresent: writer.field("status", "already_present")
            case .written: writer.field("status", "written")
            case .failed(let reason), .abandoned(let reason):
                writer.field("status", "failed")
                writer.field("reason", reason)
            }
            writer.endObject()
            text += writer.text + "\n"
        }
        for bundle in bundles {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("bundle", bundle.path)
            writer.field("modules", bundle.manifest.modules.count)
            writer.field("size", bundle.byteCount)
            writer.endObject()
            text += writer.text + "\n"
        }
        return text
    }

    /// One line per module, the kept bundles, then the totals.
    func text(uploads: Bool) -> String {
        var text = ""
        var counts = (uploaded: 0, improved: 0, present: 0, written: 0, failed: 0)
        for entry in entries {
            let label: String
            var reason = ""
            switch entry.outcome {
            case .uploaded: label = "uploaded"; counts.uploaded += 1
            case .improved: label = "improved"; counts.improved += 1
            case .alreadyPresent: label = "already present"; counts.present += 1
            case .written: label = "written"; counts.written += 1
            case .failed(let why): label = "failed"; reason = ": " + why; counts.failed += 1
            case .abandoned: label = "failed"; counts.failed += 1
            }
            let padded = label.padding(toLength: 16, withPad: " ", startingAt: 0)
            text += padded + (entry.buildID.map { $0 + "  " } ?? "") + entry.name + reason + "\n"
        }
        for bundle in bundles {
            text += "bundle \(bundle.path): \(bundle.manifest.modules.count) modules, \(bundle.byteCount) bytes\n"
        }
        if entries.isEmpty { return errors.isEmpty ? "no ELF files found\n" : text }
        var totals: [String] = []
        if uploads {
            totals = ["\(counts.uploaded) uploaded"] + (counts.improved > 0 ? ["\(counts.improved) improved"] : [])
                + ["\(counts.present) already present"]
        } else {
            totals = ["\(counts.written) written"]
        }
        totals.append("\(counts.failed) failed")
        return text + "\(entries.count) modules: " + totals.joined(separator: ", ") + "\n"
    }
}

/// The post-build flow behind `crashsym upload`.
struct UploadFlow {
    var inputs: [String]
    var appID: String
    var appKey: String
    var server: String
    var metadata: BundleMetadata
    var output: String?
    var uploads: Bool
    var includeDebug: Bool
    /// Modules whose table has no DWARF (or nothing at all) fail instead of being warned about.
    var strict = false
    var maximumBundleSize: UInt64
    var deadline: ContinuousClock.Instant
    var dump: DumpConfiguration
    var logger: Logger

    func run() -> UploadSummary {
        var summary = UploadSummary()
        // Whole-run checks first, before anything is converted.
        var client: SymbolClient?
        if uploads {
            do {
                client = try makeClient()
            } catch {
                summary.errors.append(describe(error))
                return summary
            }
        }
        if let output, let problem = Self.outputProblem(output) {
            summary.errors.append(problem)
            return summary
        }
        let (modules, discoveryFailures) = Self.discover(inputs)
        var outcomes: [String: UploadSummary.Outcome] = [:]
        process(modules, client: client, outcomes: &outcomes, summary: &summary)
        summary.entries = modules.map {
            UploadSummary.Entry(buildID: $0.buildID, name: $0.name, outcome: outcomes[$0.buildID] ?? .failed("not processed"))
        } + discoveryFailures.map { UploadSummary.Entry(buildID: nil, name: $0.path, outcome: .failed($0.reason)) }
        return summary
    }

    /// Asks, converts, bundles and uploads; records what happened to each build-id in `outcomes`.
    private func process(_ modules: [DiscoveredModule], client: SymbolClient?, outcomes: inout [String: UploadSummary.Outcome],
                         summary: inout UploadSummary) {
        if modules.isEmpty { return }
        func abandon(_ ids: some Sequence<String>, _ error: String) {
            summary.errors.append(error)
            for id in ids { outcomes[id] = .abandoned(error) }
        }

        // Which modules the server lacks, or has in a form these files would improve.
        var toUpload = Set(modules.map(\.buildID))
        if let client {
            do {
                let answer = try client.missingSymbols(MissingSymbolsRequest(
                    version: metadata.version, package: metadata.package, platform: metadata.platform,
                    modules: modules.map {
                        .init(buildID: $0.buildID, name: $0.name, arch: $0.arch, hasDWARF: $0.hasDWARF,
                              hasDebugFile: includeDebug && $0.hasDWARF)
                    }))
                let improvable = Set(answer.improvable)
                for id in answer.present where !improvable.contains(id) {
                    outcomes[id] = .alreadyPresent
                    toUpload.remove(id)
                }
            } catch {
                abandon(modules.map(\.buildID), "asking the server which symbols it lacks: " + describe(error))
                return
            }
        }
        // `-o` always writes every module; otherwise only what goes up is converted.
        let toConvert = output != nil ? modules : modules.filter { toUpload.contains($0.buildID) }
        if toConvert.isEmpty { return }

        guard let staging = Self.makeStagingDirectory() else {
            abandon(toConvert.map(\.buildID), "cannot create a temporary directory (check TMPDIR)")
            return
        }
        defer { try? FileManager.default.removeItem(atPath: staging) }

        // Convert (in parallel, by the same code as `crashsym dump`).
        var configuration = dump
        configuration.outputDirectory = staging + "/symbols"
        let files = toConvert.flatMap(\.files)
        let bar = ProgressBar(total: toConvert.count, label: "convert")
        let report: DumpReport
        do {
            report = try Dumper(configuration: configuration).run(paths: files) { done, _ in bar.update(done) }
        } catch {
            abandon(toConvert.map(\.buildID), "converting: \(error)")
            return
        }
        let moduleOfFile = Dictionary(toConvert.flatMap { module in module.files.map { ($0, module.buildID) } },
                                      uniquingKeysWith: { first, _ in first })
        for failure in report.failures {
            if let buildID = moduleOfFile[failure.path] { outcomes[buildID] = .failed("\(failure.error)") }
        }
        let names = Dictionary(toConvert.map { ($0.buildID, $0.name) }, uniquingKeysWith: { first, _ in first })
        var converted = report.modules
        converted = checkContent(converted, names: names, outcomes: &outcomes, summary: &summary)
        let bundleInputs = converted.map { module in
            BundleInput(buildID: module.buildID, name: names[module.buildID] ?? module.path,
                        arch: module.architecture, hasDWARF: module.hasDWARF, symbolsPath: module.outputPath,
                        debugPath: includeDebug ? Self.debugFile(of: module) : nil)
        }
        if bundleInputs.isEmpty { return }

        // Bundle: every converted module into -o; what goes up into the staging directory unless
        // the -o bundles are exactly that.
        let writer = BundleWriter(maximumUncompressedSize: maximumBundleSize)
        var kept: [WrittenBundle] = []
        if let output {
            do {
                kept = try writer.write(bundleInputs, metadata: metadata, to: output)
            } catch {
                abandon(bundleInputs.map(\.buildID), "writing the bundle \(output): \(error.message)")
                return
            }
            summary.bundles = kept
        }
        guard let client else {
            for input in bundleInputs { outcomes[input.buildID] = .written }
            return
        }
        let uploadInputs = bundleInputs.filter { toUpload.contains($0.buildID) }
        if uploadInputs.isEmpty { return }
        var bundles = kept
        if output == nil || uploadInputs.count != bundleInputs.count {
            do {
                bundles = try writer.write(uploadInputs, metadata: metadata, to: staging + "/bundle.zip")
            } catch {
                abandon(uploadInputs.map(\.buildID), "writing the bundle: \(error.message)")
                return
            }
        }
        send(bundles, with: client, outcomes: &outcomes, summary: &summary)
    }

    /// Warns about (or, `strict`, fails) converted modules whose table has no DWARF, or nothing at
    /// all; returns the modules that go on.
    private func checkContent(_ converted: [DumpedModule], names: [String: String], outcomes: inout [String: UploadSummary.Outcome],
                              summary: inout UploadSummary) -> [DumpedModule] {
        let empty = converted.filter { $0.statistics.functions == 0 && $0.statistics.symbols == 0 }
        let namesOnly = converted.filter { !$0.hasDWARF && !($0.statistics.functions == 0 && $0.statistics.symbols == 0) }
        func list(_ modules: [DumpedModule]) -> String {
            let shown = modules.prefix(5).map { names[$0.buildID] ?? $0.path }.joined(separator: ", ")
            return modules.count > 5 ? shown + " and \(modules.count - 5) more" : shown
        }
        let advice = "upload the unstripped binaries or their debug files"
        if !namesOnly.isEmpty {
            summary.warnings.append("\(namesOnly.count) of \(converted.count) modules have no DWARF, so crashes in them get function "
                + "names without file:line (\(list(namesOnly))): \(advice)" + (strict ? "" : " (--strict makes this an error)"))
        }
        if !empty.isEmpty {
            summary.warnings.append("\(empty.count) of \(converted.count) modules have no symbols at all (\(list(empty))): \(advice)"
                + (strict ? "" : " (--strict makes this an error)"))
        }
        guard strict else { return converted }
        let refused = Set((namesOnly + empty).map(\.buildID))
        for id in refused { outcomes[id] = .failed("no DWARF in its files (--strict)") }
        return converted.filter { !refused.contains($0.buildID) }
    }

    /// Uploads `bundles` one after the other. A failure that concerns the run (the server, the
    /// key, the deadline) stops there; one that concerns the bundle (422, 413) goes on with the next.
    private func send(_ bundles: [WrittenBundle], with client: SymbolClient, outcomes: inout [String: UploadSummary.Outcome],
                      summary: inout UploadSummary) {
        for (index, bundle) in bundles.enumerated() {
            let ids = bundle.manifest.modules.map(\.buildID)
            do {
                let answer = try client.uploadBundle(
                    at: bundle.path, progress: progressBar(size: Int(clamping: bundle.byteCount), part: index, of: bundles.count))
                for (id, outcome) in Self.outcomes(of: ids, in: answer) { outcomes[id] = outcome }
            } catch {
                let part = bundles.count > 1 ? "bundle \(index + 1) of \(bundles.count) (\(ids.count) modules)" : "the bundle"
                let message = "uploading \(part): " + describe(error)
                summary.errors.append(message)
                for id in ids { outcomes[id] = .abandoned(message) }
                if Self.endsTheRun(error) {
                    let rest = bundles[(index + 1)...].flatMap { $0.manifest.modules.map(\.buildID) }
                    for id in rest { outcomes[id] = .abandoned(message) }
                    return
                }
            }
        }
    }

    /// What the server's answer says of each of `ids`.
    static func outcomes(of ids: [String], in answer: UploadResponse) -> [(String, UploadSummary.Outcome)] {
        let stored = Set(answer.stored), improved = Set(answer.improved), present = Set(answer.alreadyPresent)
        return ids.map { id in
            (id, improved.contains(id) ? .improved : stored.contains(id) ? .uploaded
                : present.contains(id) ? .alreadyPresent : .failed("the server's answer does not list it"))
        }
    }

    /// Whether a failed upload means the next bundle would fail the same way.
    static func endsTheRun(_ error: ClientError) -> Bool {
        switch error.code {
        case .connection, .deadline, .configuration, .transfer: true
        case .http: [400, 401, 403, 404].contains(error.status ?? 0)
        case .invalidResponse, .io: false
        }
    }

    /// One line for a client error, with what to check when the server refused the key.
    func describe(_ error: ClientError) -> String {
        if error.status == 401 {
            return "\(error); check that --app-id is the id printed by `crashsym apps create` (not the app's name) "
                + "and --app-key is its key"
        }
        if error.code == .connection || (error.code == .deadline && error.status == nil) {
            return "cannot reach \(ClientConfiguration.redacting(server)): \(error)"
        }
        return "\(error)"
    }

    /// Why `-o path` cannot be written, before any work: its directory must exist.
    static func outputProblem(_ path: String) -> String? {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        var status = stat()
        guard stat(directory, &status) == 0 else {
            return "-o \(path): the directory \(directory) does not exist; create it first"
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return "-o \(path): \(directory) is not a directory" }
        guard access(directory, W_OK | X_OK) == 0 else { return "-o \(path): the directory \(directory) is not writable" }
        return nil
    }

    /// The client of this run (one libcurl handle, used from this thread only).
    func makeClient() throws(ClientError) -> SymbolClient {
        try SymbolClient(configuration: ClientConfiguration(
            server: server, appID: appID, appKey: appKey, userAgent: "crashsym/\(CrashsymVersion.current)", deadline: deadline),
            logger: logger)
    }

    /// Uploads bundles written earlier (`--bundle`), as they are, each module named and counted as
    /// its manifest says. A bundle written for another app, or for another version than
    /// `--version` (when given), is refused before it is sent.
    func upload(bundles: [String], version requested: String?) -> UploadSummary {
        var summary = UploadSummary()
        let client: SymbolClient
        do {
            client = try makeClient()
        } catch {
            summary.errors.append(describe(error))
            return summary
        }
        for (index, path) in bundles.enumerated() {
            let manifest: BundleManifest
            do {
                manifest = try BundleManifest.read(bundleAt: path)
            } catch {
                summary.entries.append(UploadSummary.Entry(buildID: nil, name: path, outcome: .failed("not a crashsym bundle: \(error)")))
                continue
            }
            let entries = manifest.modules.map { (id: $0.buildID, name: $0.name) }
            func fail(_ message: String) {
                summary.errors.append(message)
                summary.entries += entries.map { UploadSummary.Entry(buildID: $0.id, name: $0.name, outcome: .abandoned(message)) }
            }
            if let requested, requested != manifest.version {
                fail("\(path) holds version \(manifest.version), not --version \(requested): a bundle is uploaded as it is, "
                    + "so write it again with --version \(requested), or leave --version out")
                continue
            }
            if manifest.appID != appID {
                fail("\(path) was written for app \(manifest.appID), not --app-id \(appID): write it again with --app-id \(appID)")
                continue
            }
            var status = stat()
            let size = stat(path, &status) == 0 ? Int(status.st_size) : 0
            do {
                let answer = try client.uploadBundle(at: path, progress: progressBar(size: size, part: index, of: bundles.count))
                let outcomes = Dictionary(Self.outcomes(of: entries.map(\.id), in: answer), uniquingKeysWith: { first, _ in first })
                summary.entries += entries.map { UploadSummary.Entry(buildID: $0.id, name: $0.name, outcome: outcomes[$0.id]!) }
            } catch {
                fail("uploading \(path): " + describe(error))
                if Self.endsTheRun(error) { break }
            }
        }
        return summary
    }

    /// A progress callback drawing a byte-count bar, redrawn once per 0.1 %; nil unless stderr is a terminal.
    func progressBar(size: Int, part: Int, of count: Int) -> ((UInt64, UInt64) -> Void)? {
        let bar = ProgressBar(total: size, label: count > 1 ? "upload \(part + 1)/\(count)" : "upload", minimum: 1)
        guard bar.enabled else { return nil }
        var drawn = -1
        return { sent, total in
            guard total > 0 else { return }
            let permille = Int(min(1000, sent * 1000 / total))
            guard permille != drawn else { return }
            drawn = permille
            bar.update(permille == 1000 ? bar.total : Int(clamping: sent))
        }
    }

    /// The original debug file of a converted module: its separate debug file, else the binary when
    /// it carries the DWARF itself.
    static func debugFile(of module: DumpedModule) -> String? {
        if let separate = module.debugFilePath { return separate }
        return module.hasDWARF ? module.path : nil
    }

    /// ELF files under `paths` grouped by build-id, in input order. Relocatable objects (`.o`) are not
    /// modules and are skipped; a binary without a build-id cannot be matched to a crash, so it is an error.
    static func discover(_ paths: [String]) -> (modules: [DiscoveredModule], failures: [(path: String, reason: String)]) {
        let (files, missing) = Dumper.findELFFiles(paths)
        var failures = missing.map { (path: $0.path, reason: $0.error.message) }
        var modules: [DiscoveredModule] = []
        var indexOfBuildID: [String: Int] = [:]
        var loadable: [Bool] = []
        var seenFiles = Set<String>()
        for path in files where seenFiles.insert(path).inserted {
            let file: ELFFile
            do {
                file = try ELFFile(path: path)
            } catch {
                failures.append((path: path, reason: error.message))
                continue
            }
            if file.header.type == 1 /* ET_REL */ { continue }
            guard let id = file.buildID, !id.isEmpty else {
                failures.append((path: path, reason: "no GNU build-id: its symbols could not be matched to crash reports"))
                continue
            }
            let buildID = hexString(id)
            let isLoadable = !file.programHeaders.isEmpty && !file.hasDWARFOnly
            if let index = indexOfBuildID[buildID] {
                modules[index].files.append(path)
                modules[index].hasDWARF = modules[index].hasDWARF || file.hasDWARF
                // Name the module after the binary rather than its debug file.
                if isLoadable && !loadable[index] {
                    modules[index].name = baseName(path)
                    loadable[index] = true
                }
                continue
            }
            indexOfBuildID[buildID] = modules.count
            modules.append(DiscoveredModule(buildID: buildID, name: baseName(path), arch: file.architectureName, files: [path],
                                            hasDWARF: file.hasDWARF))
            loadable.append(isLoadable)
        }
        return (modules, failures)
    }

    static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    static func makeStagingDirectory() -> String? {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/crashsym-upload-XXXXXX").utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
    }
}

extension ELFFile {
    /// A separate debug file (`objcopy --only-keep-debug`): its code sections are `SHT_NOBITS`.
    var hasDWARFOnly: Bool {
        guard let text = section(named: ".text") else { return false }
        return text.type == 8 /* SHT_NOBITS */
    }
}
