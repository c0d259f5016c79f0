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
}

/// What happened to each module of an `upload` run, printed at the end.
struct UploadSummary {
    enum Outcome {
        case uploaded
        case alreadyPresent
        case written
        case failed(String)
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

    var succeeded: Bool {
        !entries.isEmpty && !entries.contains { if case .failed = $0.outcome { return true } else { return false } }
    }

    /// One JSON object per line: each module (`status` uploaded, already_present, written or failed,
    /// with `reason`), then each kept bundle (`bundle`, `modules`, `size`).
    func json() -> String {
        var text = ""
        for entry in entries {
            var writer = JSONWriter()
            writer.beginObject()
            if let buildID = entry.buildID { writer.field("build_id", buildID) } else { writer.fieldNull("build_id") }
            writer.field("name", entry.name)
            switch entry.outcome {
            case .uploaded: writer.field("status", "uploaded")
            case .alreadyPresent: writer.field("status", "already_present")
            case .written: writer.field("status", "written")
            case .failed(let reason):
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
        var counts = (uploaded: 0, present: 0, written: 0, failed: 0)
        for entry in entries {
            let label: String
            var reason = ""
            switch entry.outcome {
            case .uploaded: label = "uploaded"; counts.uploaded += 1
            case .alreadyPresent: label = "already present"; counts.present += 1
            case .written: label = "written"; counts.written += 1
            case .failed(let why): label = "failed"; reason = ": " + why; counts.failed += 1
            }
            let padded = label.padding(toLength: 16, withPad: " ", startingAt: 0)
            text += padded + (entry.buildID.map { $0 + "  " } ?? "") + entry.name + reason + "\n"
        }
        for bundle in bundles {
            text += "bundle \(bundle.path): \(bundle.manifest.modules.count) modules, \(bundle.byteCount) bytes\n"
        }
        var totals: [String] = []
        if uploads {
            totals = ["\(counts.uploaded) uploaded", "\(counts.present) already present"]
        } else {
            totals = ["\(counts.written) written"]
        }
        totals.append("\(counts.failed) failed")
        if entries.isEmpty { return "no ELF files found\n" }
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
    var maximumBundleSize: UInt64
    var deadline: ContinuousClock.Instant
    var dump: DumpConfiguration
    var logger: Logger

    func run() -> UploadSummary {
        let (modules, discoveryFailures) = Self.discover(inputs)
        var outcomes: [String: UploadSummary.Outcome] = [:]
        var summary = UploadSummary()
        process(modules, outcomes: &outcomes, summary: &summary)
        summary.entries = modules.map {
            UploadSummary.Entry(buildID: $0.buildID, name: $0.name, outcome: outcomes[$0.buildID] ?? .failed("not processed"))
        } + discoveryFailures.map { UploadSummary.Entry(buildID: nil, name: $0.path, outcome: .failed($0.reason)) }
        return summary
    }

    /// Asks, converts, bundles and uploads; records what happened to each build-id in `outcomes`.
    private func process(_ modules: [DiscoveredModule], outcomes: inout [String: UploadSummary.Outcome],
                         summary: inout UploadSummary) {
        if modules.isEmpty { return }

        var client: SymbolClient?
        var toConvert = modules
        if uploads {
            do {
                let made = try makeClient()
                client = made
                let answer = try made.missingSymbols(MissingSymbolsRequest(
                    version: metadata.version, package: metadata.package, platform: metadata.platform,
                    modules: modules.map { .init(buildID: $0.buildID, name: $0.name, arch: $0.arch) }))
                let present = Set(answer.present)
                for module in modules where present.contains(module.buildID) { outcomes[module.buildID] = .alreadyPresent }
                toConvert = modules.filter { !present.contains($0.buildID) }
            } catch {
                for module in modules { outcomes[module.buildID] = .failed("asking the server which symbols it lacks: \(error)") }
                return
            }
        }
        if toConvert.isEmpty { return }

        guard let staging = Self.makeStagingDirectory() else {
            for module in toConvert { outcomes[module.buildID] = .failed("cannot create a temporary directory") }
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
            for module in toConvert { outcomes[module.buildID] = .failed("\(error)") }
            return
        }
        let moduleOfFile = Dictionary(toConvert.flatMap { module in module.files.map { ($0, module.buildID) } },
                                      uniquingKeysWith: { first, _ in first })
        for failure in report.failures {
            if let buildID = moduleOfFile[failure.path] { outcomes[buildID] = .failed("\(failure.error)") }
        }
        let names = Dictionary(toConvert.map { ($0.buildID, $0.name) }, uniquingKeysWith: { first, _ in first })
        let bundleInputs = report.modules.map { converted in
            BundleInput(buildID: converted.buildID, name: names[converted.buildID] ?? converted.path,
                        arch: converted.architecture, hasDWARF: converted.hasDWARF, symbolsPath: converted.outputPath,
                        debugPath: includeDebug ? Self.debugFile(of: converted) : nil)
        }
        if bundleInputs.isEmpty { return }

        // Bundle.
        let bundles: [WrittenBundle]
        do {
            bundles = try BundleWriter(maximumUncompressedSize: maximumBundleSize)
                .write(bundleInputs, metadata: metadata, to: output ?? staging + "/bundle.zip")
        } catch {
            for input in bundleInputs { outcomes[input.buildID] = .failed("writing the bundle: \(error)") }
            return
        }
        if output != nil { summary.bundles = bundles }
        guard let client else {
            for input in bundleInputs { outcomes[input.buildID] = .written }
            return
        }

        // Upload, one bundle after the other.
        for (index, bundle) in bundles.enumerated() {
            do {
                let answer = try client.uploadBundle(
                    at: bundle.path, progress: progressBar(size: Int(clamping: bundle.byteCount), part: index, of: bundles.count))
                let stored = Set(answer.stored), present = Set(answer.alreadyPresent)
                for module in bundle.manifest.modules {
                    outcomes[module.buildID] = stored.contains(module.buildID) ? .uploaded
                        : present.contains(module.buildID) ? .alreadyPresent
                        : .failed("the server's answer does not list it")
                }
            } catch {
                for module in bundle.manifest.modules { outcomes[module.buildID] = .failed("upload: \(error)") }
            }
        }
    }

    /// The client of this run (one libcurl handle, used from this thread only).
    func makeClient() throws(ClientError) -> SymbolClient {
        try SymbolClient(configuration: ClientConfiguration(
            server: server, appID: appID, appKey: appKey, userAgent: "crashsym/\(CrashsymVersion.current)", deadline: deadline),
            logger: logger)
    }

    /// Uploads bundles written earlier (`--bundle`), as they are: the server's answer names the modules.
    func upload(bundles: [String]) -> UploadSummary {
        var summary = UploadSummary()
        let client: SymbolClient
        do {
            client = try makeClient()
        } catch {
            summary.entries = bundles.map { UploadSummary.Entry(buildID: nil, name: $0, outcome: .failed("\(error)")) }
            return summary
        }
        for (index, path) in bundles.enumerated() {
            var status = stat()
            let size = stat(path, &status) == 0 ? Int(status.st_size) : 0
            let name = Self.baseName(path)
            do {
                let answer = try client.uploadBundle(at: path, progress: progressBar(size: size, part: index, of: bundles.count))
                summary.entries += answer.stored.map { UploadSummary.Entry(buildID: $0, name: name, outcome: .uploaded) }
                summary.entries += answer.alreadyPresent.map { UploadSummary.Entry(buildID: $0, name: name, outcome: .alreadyPresent) }
            } catch {
                summary.entries.append(UploadSummary.Entry(buildID: nil, name: path, outcome: .failed("upload: \(error)")))
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
                // Name the module after the binary rather than its debug file.
                if isLoadable && !loadable[index] {
                    modules[index].name = baseName(path)
                    loadable[index] = true
                }
                continue
            }
            indexOfBuildID[buildID] = modules.count
            modules.append(DiscoveredModule(buildID: buildID, name: baseName(path), arch: file.architectureName, files: [path]))
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
