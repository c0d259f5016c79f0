import SymBytes
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// One run of the llvm-symbolizer drop-in: the protocol's input lines (the options' inputs, else
/// standard input, each answer written before the next line is read) answered from modules opened
/// once per path.
public enum SymbolizerSession {
    /// Answers the inputs `options` names, or standard input; `programName` prefixes errors, as
    /// llvm-symbolizer prefixes them with its argv[0]. Returns the exit status.
    public static func run(options: SymbolizerOptions, programName: String) -> Int32 {
        var locator = DebugFileLocator(debugDirectories: options.debugDirectories)
        // As llvm-symbolizer does: debuginfod servers from $DEBUGINFOD_URLS.
        locator.debuginfod = DebuginfodProvider.Configuration.fromEnvironment()
        let cache = ModuleCache(locator: locator)
        var renderer = SymbolizerRenderer(options: options)
        var output: [UInt8] = []
        output.reserveCapacity(1 << 16)
        var reported = Set<String>()
        var sourceContext = SymbolizerSourceContext(lines: options.sourceContextLines)

        var parser = SymbolizerLineParser(object: options.object)
        func answer(_ bytes: UnsafeRawBufferPointer) {
            guard let parsed = parser.parse(bytes) else {
                renderer.renderUnknown(.code, address: nil, moduleName: options.object ?? "", into: &output)
                return
            }
            let request: SymbolizerRequest
            switch parsed {
            case .failure(let problem):
                StandardError.write("\(programName): error: '\(InputPreview.quote(bytes))': \(problem.message)\n")
                // llvm-symbolizer answers a line it cannot parse as CODE, whatever its command.
                renderer.renderUnknown(.code, address: nil, moduleName: problem.module, into: &output)
                return
            case .success(let parsedRequest):
                request = parsedRequest
            }
            let opened = cache.module(at: request.path)
            if case .failure(let error) = opened {
                let message = Self.message(for: error)
                if reported.insert(request.path).inserted {
                    StandardError.write("\(programName): error: '\(request.path)': \(message)\n")
                }
                renderer.renderUnknown(request.kind, address: request.address, moduleName: request.module,
                                       message: message, into: &output)
                return
            }
            guard case .success(let module) = opened, let printed = request.address else {
                // A symbol name (`main+4`): not resolved here.
                renderer.renderUnknown(request.kind, address: nil, moduleName: request.module, into: &output)
                return
            }
            // `--adjust-vma`: the object is taken as moved by the offset; the answer names the
            // address as given.
            let address = printed &- options.adjustVMA
            let start = output.count
            switch request.kind {
            case .data:
                renderer.renderData(address, module: module, moduleName: request.module, into: &output)
            case .code:
                do {
                    try renderer.renderCode(address, module: module, moduleName: request.module, into: &output)
                    try sourceContext.complete(answerAt: start, of: &output, address: address, module: module, options: options)
                } catch {
                    output.removeSubrange(start...)
                    StandardError.write("\(programName): error: '\(request.path)': \(error.message)\n")
                    renderer.renderUnknown(.code, address: address, moduleName: request.module,
                                           message: error.message, into: &output)
                }
            case .frame:
                renderer.renderFrame(address, moduleName: request.module, into: &output)
            }
            if address != printed && (options.printAddress || options.outputStyle == .json) {
                Self.replaceAddress(address, with: printed, inAnswerAt: start, of: &output)
            }
        }

        if options.inputs.isEmpty {
            InputLines.forEachLine(of: STDIN_FILENO, answer) {
                _ = output.withUnsafeBytes { FileIO.writeAll(STDOUT_FILENO, $0) }
                output.removeAll(keepingCapacity: true)
            }
        } else {
            for input in options.inputs {
                var copy = input
                copy.withUTF8 { answer(UnsafeRawBufferPointer($0)) }
            }
        }
        _ = output.withUnsafeBytes { FileIO.writeAll(STDOUT_FILENO, $0) }
        return 0
    }

    /// The answer at `output[start...]` with its first `0x…` of `address` (the `-a` line or
    /// JSON's `"Address"`, which come first) spelling `printed` instead.
    static func replaceAddress(_ address: UInt64, with printed: UInt64, inAnswerAt start: Int, of output: inout [UInt8]) {
        let old = Array(("0x" + String(address, radix: 16)).utf8), new = Array(("0x" + String(printed, radix: 16)).utf8)
        var index = start
        while index + old.count <= output.count {
            if output[index..<(index + old.count)].elementsEqual(old),
               index + old.count == output.count || !Self.isHexDigit(output[index + old.count]) {
                output.replaceSubrange(index..<(index + old.count), with: new)
                return
            }
            index += 1
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// llvm-symbolizer's wording for the common failures.
    static func message(for error: FormatError) -> String {
        switch error.code {
        case .io where error.message.hasPrefix("cannot open: "):
            return String(error.message.dropFirst("cannot open: ".count))
        case .badMagic:
            return "The file was not recognized as a valid object file"
        default:
            return error.message
        }
    }
}
