/// A crash report in one model, whatever format it came in: modules, stacks of frames, the
/// signal or reason, and the original text so a text report can be reprinted in place.
public struct CrashReport: Sendable {
    /// The format the report was read from.
    public var format: ReportFormat
    /// Modules named by the report (module map, images, or the modules frames refer to).
    public var modules: [ReportModule]
    /// Stacks in report order: a sanitizer report's access, free and alloc stacks; each thread.
    public var stacks: [ReportStack]
    /// The signal or error kind (`SIGSEGV`, `heap-use-after-free`, `Illegal instruction`).
    public var signal: String?
    /// A one-line reason or description, when the report has one.
    public var reason: String?
    /// Other facts the report states (`pid`, `timestamp`, `abi`…), in report order.
    public var metadata: [ReportMetadata]
    /// The lines of a text report (empty for JSON inputs): the text writer reprints them.
    public var lines: [Substring]

    /// Creates a report.
    public init(format: ReportFormat, modules: [ReportModule] = [], stacks: [ReportStack] = [],
                signal: String? = nil, reason: String? = nil,
                metadata: [ReportMetadata] = [], lines: [Substring] = []) {
        self.format = format
        self.modules = modules
        self.stacks = stacks
        self.signal = signal
        self.reason = reason
        self.metadata = metadata
        self.lines = lines
    }

    /// The index of the module with `path`, adding it when absent; a build-id or load address
    /// learnt later fills the existing entry.
    public mutating func moduleIndex(path: String, buildID: String? = nil, loadAddress: UInt64? = nil) -> Int {
        // Indexed by path, so a hostile report naming a million modules stays linear; the index is
        // checked against `modules`, which callers may also edit directly.
        var known = modulesByPath[path].flatMap { $0 < modules.count && modules[$0].path == path ? $0 : nil }
        if known == nil && modulesByPath.count != modules.count { known = modules.firstIndex(where: { $0.path == path }) }
        if let index = known {
            if modules[index].buildID == nil, let buildID { modules[index].buildID = buildID }
            if modules[index].loadAddress == nil, let loadAddress { modules[index].loadAddress = loadAddress }
            return index
        }
        modules.append(ReportModule(path: path, buildID: buildID, loadAddress: loadAddress))
        modulesByPath[path] = modules.count - 1
        return modules.count - 1
    }

    /// Positions in `modules` by path, kept by `moduleIndex(path:…)`.
    private var modulesByPath: [String: Int] = [:]

    /// The number of frames over all stacks.
    public var frameCount: Int { stacks.reduce(0) { $0 + $1.frames.count } }

    /// The value of the first metadata entry named `key`.
    public func metadata(_ key: String) -> String? {
        metadata.first(where: { $0.key == key })?.value
    }
}

/// One fact a report states, kept in report order.
public struct ReportMetadata: Sendable, Equatable {
    /// The name (`pid`, `timestamp`, `abi`).
    public var key: String
    /// The value as printed.
    public var value: String

    /// Creates an entry.
    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}

/// A module (executable or shared library) as the report names it.
public struct ReportModule: Sendable, Equatable {
    /// The file name (last path component, or the name the report gives).
    public var name: String
    /// The path on the crashing machine (may be inside an APK: `base.apk!lib/arm64/libfoo.so`).
    public var path: String
    /// The GNU build-id in lowercase hex, when the report gives it.
    public var buildID: String?
    /// The lowest address the module was mapped at, when the report gives it.
    public var loadAddress: UInt64?
    /// The size of the mapping, when known.
    public var size: UInt64?
    /// The offset of the ELF file inside its container (an APK), when the report gives it.
    public var fileOffset: UInt64?
    /// Why the file at `path` was refused as this module's (it contradicts what the report
    /// says of its mappings: a core's `NT_FILE` ranges or memory), when it was: no file is
    /// then taken by path or name, and the module's frames are unresolved with its message.
    public var refusal: ModuleRefusal?

    /// Creates a module; `name` defaults to the last component of `path`.
    public init(path: String, name: String? = nil, buildID: String? = nil, loadAddress: UInt64? = nil,
                size: UInt64? = nil, fileOffset: UInt64? = nil) {
        self.path = path
        self.name = name ?? ReportModule.fileName(of: path)
        self.buildID = buildID
        self.loadAddress = loadAddress
        self.size = size
        self.fileOffset = fileOffset
    }

    /// The last component of a path (after `/` or an APK's `!`).
    public static func fileName(of path: String) -> String {
        // By bytes: both separators are ASCII, so the cut is a character boundary.
        let utf8 = path.utf8
        guard let cut = utf8.lastIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "!") }) else { return path }
        return String(path[utf8.index(after: cut)...])
    }
}

/// One stack: a thread's backtrace or one of a sanitizer report's stacks.
public struct ReportStack: Sendable, Equatable {
    /// A label: `READ of size 1 at 0x… thread T0`, `freed by thread T0 here`, a thread name.
    public var name: String?
    /// The thread id as the report prints it (`T0`, `18091`).
    public var thread: String?
    /// Whether this is the crashing thread or the faulting access.
    public var crashed: Bool
    /// Frames as printed, innermost first.
    public var frames: [ReportFrame]

    /// Creates a stack.
    public init(name: String? = nil, thread: String? = nil, crashed: Bool = false, frames: [ReportFrame] = []) {
        self.name = name
        self.thread = thread
        self.crashed = crashed
        self.frames = frames
    }
}

/// How a frame's address relates to the instruction to look up.
public enum AddressConvention: String, Sendable, Equatable {
    /// The address is the instruction itself: the faulting pc, or a caller address the producing
    /// tool already moved back into the call (sanitizers, `eu-stack -b`, tombstones).
    case exact
    /// The address is a return address: the call is the instruction before it (look up `pc - 1`).
    case returnAddress = "return-address"
}

/// What a frame's module offset is relative to.
public enum OffsetBase: String, Sendable, Equatable {
    /// The offset is a file virtual address (`pc - load bias`): sanitizers, glibc `(+0x…)`,
    /// tombstones' relative pcs.
    case virtualAddress = "vaddr"
    /// The offset is from the module's lowest mapped address (`eu-stack`, Swift images): add the
    /// page-aligned `p_vaddr` of the first `PT_LOAD` to get a file virtual address.
    case mappingStart = "mapping"
}

/// One frame as printed.
public struct ReportFrame: Sendable, Equatable {
    /// The frame number as printed (`#3` is 3).
    public var index: Int
    /// The absolute address as printed, when printed.
    public var address: UInt64?
    /// The module (index into `CrashReport.modules`), when known.
    public var module: Int?
    /// The address relative to the module, when known (see `offsetBase`).
    public var moduleOffset: UInt64?
    /// What `moduleOffset` is relative to.
    public var offsetBase: OffsetBase
    /// A symbol the offset is relative to instead (glibc's `lib.so(func+0x1c)`).
    public var symbol: String?
    /// The address convention of this frame.
    public var convention: AddressConvention
    /// A function name the report already gives, when it does.
    public var function: String?
    /// The 0-based line of a text report the frame was read from.
    public var line: Int?
    /// Why the frame could not be read fully (a malformed frame line), when it could not.
    public var problem: String?
    /// How a stack walk found the frame (crashsym's walk of a core or minidump, or a JSON
    /// report that says so); nil for frames another tool printed.
    public var foundBy: FoundBy?

    /// How a walked frame was found (DESIGN.md "Stack walking"; `FrameTrust` of SymUnwind).
    public enum FoundBy: String, Sendable, Equatable, CaseIterable {
        /// The registers the dump recorded (the first frame), or those the kernel saved when a
        /// signal interrupted the frame.
        case context
        /// Unwound with call-frame information.
        case cfi
        /// Unwound by following the frame-pointer chain.
        case framePointer = "frame-pointer"
        /// A return address found by scanning the stack (the least certain).
        case scan
    }
    /// What the sender's own symbolication resolved the frame to (the `"symbolized"` chain of a
    /// crashsym JSON report, innermost first): used only for a module whose symbols the
    /// symbolicator does not have (an agent's `--symbols` that never leave its host).
    public var senderLocations: [SourceLocation] = []

    /// Creates a frame.
    public init(index: Int, address: UInt64? = nil, module: Int? = nil, moduleOffset: UInt64? = nil,
                offsetBase: OffsetBase = .virtualAddress, symbol: String? = nil,
                convention: AddressConvention = .exact, function: String? = nil, line: Int? = nil,
                problem: String? = nil, foundBy: FoundBy? = nil) {
        self.index = index
        self.address = address
        self.module = module
        self.moduleOffset = moduleOffset
        self.offsetBase = offsetBase
        self.symbol = symbol
        self.convention = convention
        self.function = function
        self.line = line
        self.problem = problem
        self.foundBy = foundBy
    }
}
