import SymBytes
import SymELF

/// One module written as a Breakpad symbol file by `dump --format breakpad`.
public struct BreakpadModule: Sendable {
    /// The input file.
    public var path: String
    /// The separate debug file the DWARF came from, if any.
    public var debugFilePath: String?
    /// Lowercase hex build-id.
    public var buildID: String
    /// Breakpad's module id (`MODULE` line).
    public var moduleID: String
    /// Architecture name (`x86_64`, `aarch64`, ...).
    public var architecture: String
    /// The written `.sym` file.
    public var outputPath: String
    /// Its size in bytes.
    public var byteCount: Int
}

/// `dump --format breakpad`: ELF files to Breakpad `.sym` files, laid out as a Breakpad symbol
/// store (`<outdir>/<name>/<module id>/<name>.sym`, what `symupload`, Crashpad servers and
/// Mozilla's and Sentry's symbol servers read).
public enum BreakpadDumper {
    /// Converts every ELF file under `paths`, one module per build-id, in input order.
    public static func run(paths: [String], configuration: DumpConfiguration,
                           progress: (Int, Int) -> Void = { _, _ in }) throws(FormatError) -> (modules: [BreakpadModule], failures: [DumpFailure]) {
        var (files, failures) = Dumper.findELFFiles(paths)
        try FileSystem.createDirectory(configuration.outputDirectory)
        // A stripped binary and its debug file (same build-id) are one module.
        var groups: [[ELFFile]] = []
        var groupOfBuildID: [[UInt8]: Int] = [:]
        for path in files {
            do {
                let file = try ELFFile(path: path)
                if let buildID = file.buildID, !buildID.isEmpty, let group = groupOfBuildID[buildID] {
                    groups[group].append(file)
                    continue
                }
                if let buildID = file.buildID, !buildID.isEmpty { groupOfBuildID[buildID] = groups.count }
                groups.append([file])
            } catch {
                failures.append(DumpFailure(path: path, error: error.at(path: path)))
            }
        }
        files = []
        var modules: [BreakpadModule] = []
        for (index, group) in groups.enumerated() {
            do {
                modules.append(try convert(group, configuration: configuration))
            } catch {
                failures.append(DumpFailure(path: group[0].path, error: error.at(path: group[0].path)))
            }
            progress(index + 1, groups.count)
        }
        return (modules, failures)
    }

    static func convert(_ group: [ELFFile], configuration: DumpConfiguration) throws(FormatError) -> BreakpadModule {
        let first = group[0]
        guard let buildID = first.buildID, !buildID.isEmpty else {
            throw FormatError(.invalidValue, "no GNU build-id: Breakpad's module id is made from it")
        }
        // The same choice of binary and debug file as `Dumper.convert`.
        let binary = group.first { !$0.programHeaders.isEmpty && $0.sections.contains { $0.name == ".dynsym" } } ?? first
        var debugFile = group.first { $0.hasDWARF && $0 !== binary }
        if !binary.hasDWARF && debugFile == nil {
            debugFile = configuration.locator.locate(for: binary)
        }
        let text = try BreakpadWriter.symbolFile(binary: binary, debugFile: debugFile, decoder: configuration.decoder,
                                                 threads: configuration.jobs)
        let name = ModuleConverter.baseName(binary.path)
        let moduleID = BreakpadWriter.moduleID(buildID: buildID)
        let directory = configuration.outputDirectory + "/" + name + "/" + moduleID
        try FileSystem.createDirectory(directory)
        let output = directory + "/" + name + ".sym"
        let bytes = Array(text.utf8)
        try FileSystem.writeAtomically(bytes, to: output)
        return BreakpadModule(path: binary.path, debugFilePath: debugFile?.path, buildID: hexString(buildID),
                              moduleID: moduleID, architecture: binary.architectureName, outputPath: output,
                              byteCount: bytes.count)
    }
}
