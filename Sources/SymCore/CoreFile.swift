import SymBytes
import SymELF

/// An ELF core file (`ET_CORE`, what the kernel's `core_pattern`, `systemd-coredump`, gdb's
/// `gcore` write): each thread's registers (`NT_PRSTATUS`), the signal (`NT_SIGINFO`), the files
/// mapped into the process (`NT_FILE`), the auxiliary vector (`NT_AUXV`), the process name
/// (`NT_PRPSINFO`) and the memory the core kept (`PT_LOAD` segments).
///
/// Pure: it is handed the bytes (a `MappedFile`, so a core of any size is read through the
/// mapping and never loaded whole, or an array). Every offset, size and count read from the file
/// is checked against the file and for overflow: a hostile core gives a `FormatError`, never a
/// trap, never an allocation larger than the file. Memory a segment declares but the file does
/// not hold (segments the kernel did not dump, a truncated core) reads as absent.
public struct CoreFile: Sendable {
    /// The file's bytes, kept for memory reads.
    let storage: Minidump.Storage
    /// The CPU.
    public var machine: Machine
    /// Threads in the core's order (the kernel writes the thread that took the signal first).
    public var threads: [Thread]
    /// The files mapped into the process, in address order.
    public var mappedFiles: [MappedRange]
    /// The signal that ended the process, when the core has `NT_SIGINFO`.
    public var signal: SignalInfo?
    /// The auxiliary vector's entries (type, value), in order.
    public var auxiliaryVector: [(type: UInt64, value: UInt64)]
    /// The process id and name (`pr_fname`) and command line (`pr_psargs`), when the core has
    /// `NT_PRPSINFO`.
    public var process: ProcessInfo?
    /// The memory segments, sorted by address, none overlapping.
    public var segments: [Segment]

    /// The CPUs whose registers are read.
    public enum Machine: UInt16, Sendable {
        case x86_64 = 62
        case aarch64 = 183
    }

    /// A thread: its id, the signal it had pending (`pr_cursig`), its registers by DWARF number
    /// (x86_64: 0 rax … 7 rsp, 8-15 r8-r15, 16 rip; aarch64: 0-30 x0-x30, 31 sp, 32 pc).
    public struct Thread: Sendable, Equatable {
        public var id: UInt32
        public var signal: UInt16
        public var registers: [UInt16: UInt64]
        /// The instruction pointer.
        public var pc: UInt64? { registers[pcRegister] }
        /// The number `registers` keeps the pc under.
        let pcRegister: UInt16
    }

    /// One `NT_FILE` entry: a file mapped at `start..<end` from byte `fileOffset` of `path`.
    public struct MappedRange: Sendable, Equatable {
        public var start: UInt64
        public var end: UInt64
        public var fileOffset: UInt64
        public var path: String
    }

    /// The signal of `NT_SIGINFO`: number, code (`si_code`), errno and, for the faults
    /// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP), the faulting address.
    public struct SignalInfo: Sendable, Equatable {
        public var number: Int32
        public var code: Int32
        public var errno: Int32
        public var address: UInt64?

        /// Creates a signal description.
        public init(number: Int32, code: Int32, errno: Int32, address: UInt64?) {
            self.number = number
            self.code = code
            self.errno = errno
            self.address = address
        }
    }

    /// `NT_PRPSINFO`: the process id, the executable's name (up to 15 bytes) and arguments (80).
    public struct ProcessInfo: Sendable, Equatable {
        public var pid: UInt32
        public var name: String
        public var arguments: String
    }

    /// A `PT_LOAD` segment: `memorySize` bytes at `address`, the first `fileSize` of them at
    /// `fileOffset` of the core (clipped to the file when it is truncated).
    public struct Segment: Sendable, Equatable {
        public var address: UInt64
        public var memorySize: UInt64
        public var fileOffset: Int
        public var fileSize: Int
    }

    /// Most program headers read (the kernel writes one per mapping; `vm.max_map_count` is 65,530
    /// by default, and `PN_XNUM` extends the count past 65,535).
    public static let maximumSegments = 1 << 20
    /// Most notes read.
    public static let maximumNotes = 1 << 20
    /// Longest path of an `NT_FILE` entry.
    static let maximumPathBytes = 4096

    /// Reads a core held in memory.
    public init(bytes: [UInt8]) throws(FormatError) {
        try self.init(storage: .array(bytes))
    }

    /// Reads a memory-mapped core (the mapping is kept for memory reads).
    public init(file: MappedFile) throws(FormatError) {
        try self.init(storage: .mapped(file))
    }

    /// Whether `bytes` start like an ELF core file (64-bit little-endian `ET_CORE`): the one
    /// test of "is this a core" (report detection asks it before reading text).
    public static func isCore(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 18 && ELF.hasMagic(bytes) && bytes[16] == 4 && bytes[17] == 0
    }

    init(storage: Minidump.Storage) throws(FormatError) {
        self.storage = storage
        var parsed = Parsed()
        try storage.withBytes { (bytes) throws(FormatError) in parsed = try Parsed(bytes) }
        machine = parsed.machine
        threads = parsed.threads
        mappedFiles = parsed.mappedFiles
        signal = parsed.signal
        auxiliaryVector = parsed.auxiliaryVector
        process = parsed.process
        segments = parsed.segments
    }

    /// The thread that took the signal: the first with a pending signal (the kernel writes it
    /// first), else the first thread.
    public var crashedThread: Thread? {
        threads.first { $0.signal != 0 } ?? threads.first
    }

    /// The value of auxiliary-vector entry `type` (`AT_SYSINFO_EHDR` is 33, `AT_EXECFN` 31).
    public func auxiliaryValue(_ type: UInt64) -> UInt64? {
        auxiliaryVector.first { $0.type == type }?.value
    }

    /// The segment holding `address`.
    public func segment(at address: UInt64) -> Segment? {
        var low = 0, high = segments.count
        while low < high {
            let middle = (low + high) / 2
            if segments[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let segment = segments[low - 1]
        return address - segment.address < segment.memorySize ? segment : nil
    }

    /// `count` bytes of the process's memory at `address`, when the core holds all of them (in
    /// one segment; at most 1 MiB per read).
    public func bytes(at address: UInt64, count: Int) -> [UInt8]? {
        guard count >= 0, count <= 1 << 20, let segment = segment(at: address) else { return nil }
        let offset = address - segment.address
        guard offset <= UInt64(segment.fileSize), UInt64(count) <= UInt64(segment.fileSize) - offset else { return nil }
        let start = segment.fileOffset + Int(offset)
        return try? storage.withBytes { bytes throws(FormatError) in
            // The segment was clipped to the file when read; checked again for an array.
            guard start + count <= bytes.count else { return nil }
            return Array(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]))
        }
    }

    /// Reads `size` bytes (1 to 8) of memory at `address`, little-endian; nil when absent.
    public func read(_ address: UInt64, size: Int) -> UInt64? {
        guard size >= 1, size <= 8, let segment = segment(at: address) else { return nil }
        let offset = address - segment.address
        guard offset <= UInt64(segment.fileSize), UInt64(size) <= UInt64(segment.fileSize) - offset else { return nil }
        let start = segment.fileOffset + Int(offset)
        // The segment was clipped to the file when read; the reader checks again for an array.
        return try? storage.withBytes { bytes throws(FormatError) in try ByteReader(bytes).unsigned(at: start, size: size) }
    }
}

extension CoreFile.SignalInfo {
    /// The signal's name (`SIGSEGV`), or its number.
    public var name: String {
        let names: [Int32: String] = [1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
                                      7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
                                      13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"]
        return names[number] ?? "signal \(number)"
    }

    /// The name of `si_code` (`SEGV_MAPERR`, `SI_USER`, `SI_TKILL`), or its number.
    public var codeName: String {
        switch code {
        case 0: return "SI_USER"
        case -1: return "SI_QUEUE"
        case -6: return "SI_TKILL"
        case 0x80: return "SI_KERNEL"
        default: break
        }
        let byCode: [Int32: [Int32: String]] = [
            11: [1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR"],
            7: [1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR"],
            4: [1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP", 5: "ILL_PRVOPC"],
            8: [1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV"],
            5: [1: "TRAP_BRKPT", 2: "TRAP_TRACE"],
        ]
        return byCode[number]?[code] ?? "code \(code)"
    }
}
