import SymBytes

/// A Breakpad/Crashpad minidump (Microsoft's `MINIDUMP_*` layout with Breakpad's Linux streams):
/// the threads with their registers and stacks, the modules with their build-ids, the memory,
/// the exception, the system and the Linux `/proc` files the client copied.
///
/// Every size and offset is checked against the file; counts are checked against the size of
/// the stream that declares them, so a hostile file gives a `FormatError`, never a trap, and
/// never an allocation larger than the file. Pure: it is handed the bytes (`MappedFile` or an
/// array), never opens a file.
public struct Minidump: Sendable {
    /// The file's bytes, kept for memory reads.
    let storage: Storage
    /// `time_date_stamp` of the header: when the dump was written (seconds since 1970, UTC).
    public var timestamp: UInt32
    /// Header flags (`MINIDUMP_TYPE`).
    public var flags: UInt64
    /// The stream directory.
    public var streams: [Stream]
    /// Threads, in the thread list's order (their stacks' index rebuilt when they change).
    public var threads: [Thread] {
        didSet { stacksByStart = Self.stacksByStart(threads) }
    }
    /// Loaded modules.
    public var modules: [Module]
    /// Memory ranges the dump holds (the memory list and the 64-bit memory list).
    public var memory: [MemoryRange]
    /// The exception that ended the process, when the dump has one.
    public var exception: Exception?
    /// Operating system and processor.
    public var system: SystemInfo?
    /// Breakpad's copies of Linux files: `/proc/cpuinfo`, `/proc/self/status`, `/etc/lsb-release`,
    /// `/proc/self/cmdline`, `/proc/self/environ`, `/proc/self/auxv`, `/proc/self/maps`.
    public var linuxFiles: [LinuxFile: [UInt8]]
    /// Crashpad's annotations (simple key/value pairs of the process and of each module).
    public var annotations: CrashpadAnnotations?
    /// The thread stacks sorted by start address (for `read`: a memory read searches them, not
    /// every thread, so walking a hostile list of a million threads stays linear); made again
    /// whenever `threads` is set.
    var stacksByStart: [MemoryRange]

    /// The stacks of `threads` sorted by start address.
    static func stacksByStart(_ threads: [Thread]) -> [MemoryRange] {
        threads.map(\.stack).sorted { $0.start < $1.start }
    }

    /// Most streams read from a directory.
    public static let maximumStreams = 4096
    /// Longest string read (bytes).
    static let maximumStringBytes = 1 << 16

    /// A directory entry.
    public struct Stream: Sendable, Equatable {
        /// `MINIDUMP_STREAM_TYPE`.
        public var type: UInt32
        /// Where the stream is in the file.
        public var location: Range<Int>
    }

    /// A thread, with its registers (the raw context) and stack.
    public struct Thread: Sendable, Equatable {
        /// The thread id (Linux: the tid).
        public var id: UInt32
        /// Its name (thread names stream), when the dump has one.
        public var name: String?
        /// The stack's lowest address and its bytes' place in the file.
        public var stack: MemoryRange
        /// The CPU context's place in the file.
        public var context: Range<Int>
    }

    /// A module and its identity.
    public struct Module: Sendable, Equatable {
        /// Load address.
        public var base: UInt64
        /// Bytes mapped.
        public var size: UInt32
        /// Path of the file (the code file).
        public var name: String
        /// The ELF build-id from the CodeView record (`BpEL`), or a PDB 7.0 GUID (`RSDS`) padded
        /// with its age; nil when the module has no record.
        public var codeID: [UInt8]?
        /// The CodeView record's signature (`BpEL`: 0x4270454c, `RSDS`: 0x53445352).
        public var codeViewSignature: UInt32?
        /// The PDB file name of an `RSDS` record (the debug file).
        public var debugFileName: String?

        /// Breakpad's debug id of the module (`MODULE` line of its `.sym`).
        public var debugID: String? { codeID.map { Self.debugID(buildID: $0) } }

        /// Breakpad's module id of a build-id: its first 16 bytes (zero-padded) read as a GUID (the
        /// first three fields byte-swapped), in uppercase hex, and an age of 0
        /// (Breakpad `FileID::ConvertIdentifierToUUIDString` plus the age).
        public static func debugID(buildID: [UInt8]) -> String {
            var guid = Array(buildID.prefix(16))
            guid += [UInt8](repeating: 0, count: 16 - guid.count)
            guid[0..<4].reverse()
            guid[4..<6].reverse()
            guid[6..<8].reverse()
            return hexString(guid).uppercased() + "0"
        }
    }

    /// Memory at `start` whose bytes are `location` in the file.
    public struct MemoryRange: Sendable, Equatable {
        /// Address of the first byte.
        public var start: UInt64
        /// Where its bytes are in the file.
        public var location: Range<Int>
        /// One past the last address.
        public var end: UInt64 { start &+ UInt64(location.count) }
    }

    /// The exception stream.
    public struct Exception: Sendable, Equatable {
        /// The thread that took it.
        public var threadID: UInt32
        /// Linux: the signal number; Windows: the exception code.
        public var code: UInt32
        /// Linux: `si_code`.
        public var flags: UInt32
        /// The faulting address.
        public var address: UInt64
        /// The crashed thread's context (registers at the fault), in the file.
        public var context: Range<Int>
    }

    /// The system info stream.
    public struct SystemInfo: Sendable, Equatable {
        /// `PROCESSOR_ARCHITECTURE_*` (9: AMD64, 0: x86, 5: ARM, 12: ARM64).
        public var processorArchitecture: UInt16
        /// x86: the family.
        public var processorLevel: UInt16
        /// x86: model << 8 | stepping.
        public var processorRevision: UInt16
        /// Logical processors.
        public var processorCount: UInt8
        /// `VER_PLATFORM_*` (Linux: 0x8201).
        public var platformID: UInt32
        /// Breakpad on Linux: the kernel's `uname` version text.
        public var csdVersion: String?
        /// x86: the CPUID vendor string.
        public var vendor: String?

        /// The operating system, as Breakpad's processor names it.
        public var operatingSystem: String {
            switch platformID {
            case 0x8201: return "Linux"
            case 0x8203: return "Android"
            case 0x8101: return "Mac OS X"
            case 2: return "Windows NT"
            default: return "0x" + String(platformID, radix: 16)
            }
        }

        /// Linux: the kernel release (`uname -r`), the second word of Breakpad's
        /// `Linux <release> <version> <machine>` text.
        public var kernelRelease: String? {
            let words = csdVersion?.split(separator: " ") ?? []
            return words.count >= 2 ? String(words[1]) : nil
        }

        /// Linux: the kernel version (`uname -v`), the words between the release and the machine.
        public var kernelVersion: String? {
            let words = csdVersion?.split(separator: " ") ?? []
            return words.count >= 4 ? words[2..<(words.count - 1)].joined(separator: " ") : nil
        }

        /// Breakpad's CPU name (`amd64`, `x86`, `arm`, `arm64`).
        public var cpu: String {
            switch processorArchitecture {
            case 9: return "amd64"
            case 0: return "x86"
            case 5: return "arm"
            case 12, 0x8003: return "arm64"
            default: return "0x" + String(processorArchitecture, radix: 16)
            }
        }

        /// x86: `family F model M stepping S`, as Breakpad's processor prints it.
        public var cpuInfo: String? {
            guard processorArchitecture == 9 || processorArchitecture == 0 else { return nil }
            return "family \(processorLevel) model \(processorRevision >> 8) stepping \(processorRevision & 0xff)"
        }
    }

    /// Linux files Breakpad's client copies into the dump.
    public enum LinuxFile: UInt32, Sendable, CaseIterable {
        case cpuInfo = 0x4767_0003
        case processStatus = 0x4767_0004
        case lsbRelease = 0x4767_0005
        case commandLine = 0x4767_0006
        case environment = 0x4767_0007
        case auxiliaryVector = 0x4767_0008
        case maps = 0x4767_0009
    }
}
