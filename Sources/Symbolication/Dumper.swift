import Dispatch
import Synchronization
import SymBytes
import SymELF
import SymTable

/// Settings of a `dump` run.
public struct DumpConfiguration: Sendable {
    /// Where `<build-id>.csym` files are written.
    public var outputDirectory: String
    /// Where separate debug files are looked for.
    public var locator: DebugFileLocator
    /// DWARF decoder.
    public var decoder: DWARFDecoder
    /// Files converted at once.
    public var jobs: Int

    /// Creates a configuration; `jobs` defaults to the number of cores.
    public init(outputDirectory: String, locator: DebugFileLocator = DebugFileLocator(),
                decoder: DWARFDecoder = .builtin, jobs: Int = FileSystem.processorCount) {
        self.outputDirectory = outputDirectory
        self.locator = locator
        self.decoder = decoder
        self.jobs = max(1, jobs)
    }
}

/// One module converted by `dump`.
public struct DumpedModule: Sendable {
    /// The input file.
    public var path: String
    /// The separate debug file the DWARF came from, if any.
    public var debugFilePath: String?
    /// Lowercase hex build-id.
    public var buildID: String
    /// Architecture name (`x86_64`, `aarch64`, ...).
    public var architecture: String
    /// The table's statistics.
    public var statistics: SymbolTable.Statistics
    /// The written table.
    public var outputPath: String
    /// Whether the table has DWARF (false: symbol table names only).
    public var hasDWARF: Bool
}

/// A file `dump` could not convert.
public struct DumpFailure: Sendable, Error {
    /// The input file.
    public var path: String
    /// Why.
    public var error: FormatError
}

/// The outcome of a `dump` run, in input order.
public struct DumpReport: Sendable {
    /// Converted modules.
    public var modules: [DumpedModule] = []
    /// Files that were ELF but could not be converted.
    public var failures: [DumpFailure] = []
    /// Inputs skipped because another input had the same build-id.
    public var duplicates: [String] = []
}

/// Converts ELF files into `.csym` tables keyed by build-id (`crashsym dump`).
public struct Dumper: Sendable {
    /// The run's settings.
    public var configuration: DumpConfiguration

    /// Creates a dumper.
    public init(configuration: DumpConfiguration) {
        self.configuration = configuration
    }

    /// Expands files and directories (recursively) into the ELF files among them, sorted per
    /// directory; non-ELF files are skipped quietly, unreadable paths reported.
    public static func findELFFiles(_ paths: [String]) -> (files: [String], failures: [DumpFailure]) {
        var files: [String] = []
        var failures: [DumpFailure] = []
        for path in paths {
            switch FileSystem.kind(of: path) {
            case .missing:
                failures.append(DumpFailure(path: path, error: FormatError(.io, "no such file or directory", path: path)))
            case .directory:
                files.append(contentsOf: FileSystem.files(under: path).filter(isELF))
            case .file, .other:
                files.append(path)  // named explicitly: a non-ELF is reported when opened
            }
        }
        return (files, failures)
    }

    /// Whether the file starts with the ELF magic.
    public static func isELF(_ path: String) -> Bool {
        FileSystem.prefix(of: path, count: 4).map(ELF.hasMagic) ?? false
    }

    /// Converts every ELF file under `paths`; `progress(done, total)` is called after each file.
    public func run(paths: [String], progress: @Sendable (Int, Int) -> Void = { _, _ in }) throws(FormatError) -> DumpReport {
        let (files, findFailures) = Self.findELFFiles(paths)
        try FileSystem.createDirectory(configuration.outputDirectory)
        // Group inputs by build-id so that a stripped binary and its debug file become one table.
        var groups: [[Int]] = []
        var groupOfBuildID: [[UInt8]: Int] = [:]
        var opened: [Int: ELFFile] = [:]
        var failures: [Int: DumpFailure] = [:]
        for (index, path) in files.enumerated() {
            do {
                let file = try ELFFile(path: path)
                opened[index] = file
                if let buildID = file.buildID, !buildID.isEmpty {
                    if let group = groupOfBuildID[buildID] {
                        groups[group].append(index)
                        continue
                    }
                    groupOfBuildID[buildID] = groups.count
                }
                groups.append([index])
            } catch {
                failures[index] = DumpFailure(path: path, error: error.at(path: path))
            }
        }
        let results = Mutex<[Int: Result<DumpedModule, DumpFailure>]>([:])
        let next = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        let total = groups.count
        let workers = min(configuration.jobs, max(1, total))
        // Each worker converts a whole module; inside a module the decoder may use the spare cores.
        let threadsPerFile = max(1, configuration.jobs / workers)
        let members = groups.map { $0.map { opened[$0]! } }
        let leaders = groups.map { $0[0] }
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < total else { return }
                let outcome = convert(members[index], threads: threadsPerFile)
                results.withLock { $0[leaders[index]] = outcome }
                let count = done.wrappingAdd(1, ordering: .relaxed).newValue
                progress(count, total)
            }
        }
        var report = DumpReport()
        report.failures = findFailures
        let collected = results.withLock { $0 }
        for group in groups {
            switch collected[group[0]] {
            case .success(let module)?: report.modules.append(module)
            case .failure(let failure)?: report.failures.append(failure)
            case nil: break
            }
            report.duplicates.append(contentsOf: group.dropFirst().map { files[$0] })
        }
        report.failures.append(contentsOf: failures.sorted { $0.key < $1.key }.map(\.value))
        return report
    }

    /// Converts the files sharing one build-id: DWARF from the one that has it, symbols from all.
    func convert(_ group: [ELFFile], threads: Int) -> Result<DumpedModule, DumpFailure> {
        let first = group[0]
        do throws(FormatError) {
            guard let buildID = first.buildID, !buildID.isEmpty else {
                throw FormatError(.invalidValue, "no GNU build-id: the table could not be matched to crash reports")
            }
            let hex = hexString(buildID)
            // Prefer a loadable file (with program headers) as the binary, and any file with DWARF.
            let binary = group.first { !$0.programHeaders.isEmpty && $0.sections.contains { $0.name == ".dynsym" } } ?? first
            var debugFile = group.first { $0.hasDWARF && $0 !== binary }
            if !binary.hasDWARF && debugFile == nil {
                debugFile = configuration.locator.locate(for: binary)
            }
            let bytes = try ModuleConverter.table(binary: binary, debugFile: debugFile,
                                                  decoder: configuration.decoder, threads: threads)
            let table = try SymbolTable(bytes: bytes)
            let output = configuration.outputDirectory + "/" + hex + ".csym"
            try FileSystem.writeAtomically(bytes, to: output)
            return .success(DumpedModule(
                path: binary.path, debugFilePath: debugFile?.path, buildID: hex,
                architecture: binary.architectureName, statistics: table.statistics, outputPath: output,
                hasDWARF: binary.hasDWARF || (debugFile?.hasDWARF ?? false)))
        } catch {
            return .failure(DumpFailure(path: first.path, error: error.at(path: first.path)))
        }
    }

}
