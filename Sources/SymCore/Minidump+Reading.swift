import SymBytes

extension Minidump {
    /// Where a minidump's bytes live.
    enum Storage: Sendable {
        case array([UInt8])
        case mapped(MappedFile)

        func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws(FormatError) -> Result) throws(FormatError) -> Result {
            switch self {
            case .array(let bytes):
                let outcome = bytes.withUnsafeBytes { buffer in
                    Swift.Result { () throws(FormatError) -> Result in try body(buffer) }
                }
                return try outcome.get()
            case .mapped(let file):
                return try body(file.bytes)
            }
        }
    }

    /// Reads a minidump held in memory.
    public init(bytes: [UInt8]) throws(FormatError) {
        try self.init(storage: .array(bytes))
    }

    /// Reads a memory-mapped minidump (the mapping is kept for memory reads).
    public init(file: MappedFile) throws(FormatError) {
        try self.init(storage: .mapped(file))
    }

    // Stream types (MINIDUMP_STREAM_TYPE; Breakpad `minidump_format.h`; Crashpad).
    static let threadListStream: UInt32 = 3
    static let moduleListStream: UInt32 = 4
    static let memoryListStream: UInt32 = 5
    static let exceptionStream: UInt32 = 6
    static let systemInfoStream: UInt32 = 7
    static let memory64ListStream: UInt32 = 9
    static let threadNamesStream: UInt32 = 24
    static let crashpadInfoStream: UInt32 = 0x4350_0001

    /// A minidump's first bytes: `MINIDUMP_SIGNATURE`, "MDMP" (0x504d444d little-endian).
    public static let signature: [UInt8] = Array("MDMP".utf8)
    /// `MINIDUMP_VERSION`: the low half of the header's version (the high half is the writer's).
    static let formatVersion: UInt32 = 0xa793
    /// The size of `MINIDUMP_HEADER`.
    static let headerSize = 32

    /// Checks that `bytes` start with a minidump's header: the signature, then the format version,
    /// then the rest of the header. The one check of the reader and of a server taking an upload
    /// before it keeps it.
    public static func checkHeader(_ bytes: UnsafeRawBufferPointer) throws(FormatError) {
        let reader = ByteReader(bytes)
        guard try reader.u32(at: 0) == 0x504d_444d else {  // `signature`, little-endian
            throw FormatError(.badMagic, "not a minidump (no MDMP signature)", offset: 0)
        }
        let version = try reader.u32(at: 4)
        guard version & 0xffff == formatVersion else {
            throw FormatError(.badMagic, "unknown minidump version 0x\(String(version & 0xffff, radix: 16))", offset: 4)
        }
        try reader.check(0, headerSize, "the minidump header")
    }

    init(storage: Storage) throws(FormatError) {
        self.storage = storage
        var parsed = Parsed()
        try storage.withBytes { (bytes) throws(FormatError) in
            parsed = try Parsed(bytes)
        }
        timestamp = parsed.timestamp
        flags = parsed.flags
        streams = parsed.streams
        threads = parsed.threads
        modules = parsed.modules
        memory = parsed.memory
        exception = parsed.exception
        system = parsed.system
        linuxFiles = parsed.linuxFiles
        annotations = parsed.annotations
        stacksByStart = Self.stacksByStart(parsed.threads)
    }

    /// The minidump's fields, read from its bytes.
    struct Parsed {
        var timestamp: UInt32 = 0
        var flags: UInt64 = 0
        var streams: [Stream] = []
        var threads: [Thread] = []
        var modules: [Module] = []
        var memory: [MemoryRange] = []
        var exception: Exception?
        var system: SystemInfo?
        var linuxFiles: [LinuxFile: [UInt8]] = [:]
        var annotations: CrashpadAnnotations?

        init() {}

        init(_ bytes: UnsafeRawBufferPointer) throws(FormatError) {
            try Minidump.checkHeader(bytes)
            let reader = ByteReader(bytes)
            let count = Int(try reader.u32(at: 8))
            let directory = Int(try reader.u32(at: 12))
            timestamp = try reader.u32(at: 20)
            flags = try reader.u64(at: 24)
            guard count <= Minidump.maximumStreams else {
                throw FormatError(.limitExceeded, "\(count) streams (at most \(Minidump.maximumStreams) are read)", offset: 8)
            }
            try reader.check(directory, count * 12, "the stream directory")
            for index in 0..<count {
                let entry = directory + index * 12
                let type = try reader.u32(at: entry)
                let location = try Self.location(reader, at: entry + 4, "stream \(index)")
                streams.append(Stream(type: type, location: location))
            }
            // The first stream of each type counts (a writer never repeats one).
            var seen = Set<UInt32>()
            for stream in streams where seen.insert(stream.type).inserted {
                let data = ByteReader(try reader.slice(stream.location.lowerBound, stream.location.count),
                                      baseOffset: UInt64(stream.location.lowerBound))
                switch stream.type {
                case Minidump.threadListStream: threads = try Self.threads(data, file: reader)
                case Minidump.moduleListStream: modules = try Self.modules(data, file: reader)
                case Minidump.memoryListStream: memory += try Self.memoryList(data, file: reader)
                case Minidump.memory64ListStream: memory += try Self.memory64List(data, file: reader)
                case Minidump.exceptionStream: exception = try Self.exception(data, file: reader)
                case Minidump.systemInfoStream: system = try Self.systemInfo(data, file: reader)
                case Minidump.crashpadInfoStream: annotations = try CrashpadAnnotations(data, file: reader)
                default:
                    if let file = LinuxFile(rawValue: stream.type) {
                        linuxFiles[file] = Array(data.bytes)
                    }
                }
            }
            if let names = streams.first(where: { $0.type == Minidump.threadNamesStream }) {
                let data = ByteReader(try reader.slice(names.location.lowerBound, names.location.count),
                                      baseOffset: UInt64(names.location.lowerBound))
                let named = try Self.threadNames(data, file: reader)
                for index in threads.indices { threads[index].name = named[threads[index].id] }
            }
            memory.sort { $0.start < $1.start }
        }

        /// A `MINIDUMP_LOCATION_DESCRIPTOR` (size, rva), checked against the file.
        static func location(_ reader: ByteReader, at offset: Int, _ what: String) throws(FormatError) -> Range<Int> {
            let size = Int(try reader.u32(at: offset))
            let rva = Int(try reader.u32(at: offset + 4))
            try checkFile(reader, rva, size, what, at: offset)
            return rva..<(rva + size)
        }

        static func checkFile(_ reader: ByteReader, _ offset: Int, _ size: Int, _ what: String, at field: Int) throws(FormatError) {
            guard offset <= reader.count, size <= reader.count - offset else {
                throw FormatError(.truncated, "\(what) (\(size) bytes at 0x\(String(offset, radix: 16))) extends past the end of the file",
                                  offset: UInt64(field))
            }
        }

        /// The entry count of a list stream, checked against the stream's size.
        static func count(_ data: ByteReader, header: Int, entrySize: Int, _ what: String) throws(FormatError) -> Int {
            let count = Int(try data.u32(at: 0))
            guard count <= (data.count - min(header, data.count)) / entrySize else {
                throw FormatError(.truncated, "\(what) declares \(count) entries that do not fit in its \(data.count) bytes",
                                  offset: data.baseOffset)
            }
            return count
        }

        static func threads(_ data: ByteReader, file: ByteReader) throws(FormatError) -> [Thread] {
            let count = try count(data, header: 4, entrySize: 48, "the thread list")
            var threads: [Thread] = []
            threads.reserveCapacity(count)
            for index in 0..<count {
                let entry = 4 + index * 48
                let field = Int(data.baseOffset) + entry
                let stackStart = try data.u64(at: entry + 24)
                let stack = try location(file, at: field + 32, "thread \(index)'s stack")
                let context = try location(file, at: field + 40, "thread \(index)'s context")
                threads.append(Thread(id: try data.u32(at: entry), name: nil,
                                      stack: MemoryRange(start: stackStart, location: stack), context: context))
            }
            return threads
        }

        static func threadNames(_ data: ByteReader, file: ByteReader) throws(FormatError) -> [UInt32: String] {
            let count = try count(data, header: 4, entrySize: 12, "the thread names list")
            var names: [UInt32: String] = [:]
            for index in 0..<count {
                let entry = 4 + index * 12
                let id = try data.u32(at: entry)
                let rva = try data.u64(at: entry + 4)
                guard rva <= UInt64(Int.max) else { continue }
                names[id] = try utf16String(file, at: Int(rva))
            }
            return names
        }

        /// A `MINIDUMP_STRING`: byte length, then UTF-16LE.
        static func utf16String(_ file: ByteReader, at offset: Int) throws(FormatError) -> String {
            let length = Int(try file.u32(at: offset))
            guard length <= Minidump.maximumStringBytes, length % 2 == 0 else {
                throw FormatError(.invalidValue, "string of \(length) bytes", offset: UInt64(offset))
            }
            let bytes = try file.slice(offset + 4, length, "a string")
            var units: [UInt16] = []
            units.reserveCapacity(length / 2)
            for index in stride(from: 0, to: length, by: 2) {
                units.append(UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8)
            }
            return String(decoding: units, as: UTF16.self)
        }

        static func modules(_ data: ByteReader, file: ByteReader) throws(FormatError) -> [Module] {
            let count = try count(data, header: 4, entrySize: 108, "the module list")
            var modules: [Module] = []
            modules.reserveCapacity(count)
            for index in 0..<count {
                let entry = 4 + index * 108
                let field = Int(data.baseOffset) + entry
                let base = try data.u64(at: entry)
                let size = try data.u32(at: entry + 8)
                let name = try utf16String(file, at: Int(try data.u32(at: entry + 20)))
                var module = Module(base: base, size: size, name: name, codeID: nil, codeViewSignature: nil, debugFileName: nil)
                let codeView = try location(file, at: field + 76, "module \(index)'s CodeView record")
                if codeView.count >= 4 {
                    let record = try file.slice(codeView.lowerBound, codeView.count)
                    let reader = ByteReader(record)
                    let signature = try reader.u32(at: 0)
                    module.codeViewSignature = signature
                    switch signature {
                    case 0x4270_454c:  // "BpEL": Breakpad's ELF record, the build-id follows.
                        module.codeID = Array(record[4...])
                    case 0x5344_5352 where record.count >= 24:  // "RSDS": GUID, age, PDB name.
                        module.codeID = Array(record[4..<20])
                        module.debugFileName = try reader.cString(at: 24)
                    default:
                        break
                    }
                }
                modules.append(module)
            }
            return modules
        }

        static func memoryList(_ data: ByteReader, file: ByteReader) throws(FormatError) -> [MemoryRange] {
            let count = try count(data, header: 4, entrySize: 16, "the memory list")
            var ranges: [MemoryRange] = []
            ranges.reserveCapacity(count)
            for index in 0..<count {
                let entry = 4 + index * 16
                let start = try data.u64(at: entry)
                let location = try location(file, at: Int(data.baseOffset) + entry + 8, "memory range \(index)")
                ranges.append(MemoryRange(start: start, location: location))
            }
            return ranges
        }

        static func memory64List(_ data: ByteReader, file: ByteReader) throws(FormatError) -> [MemoryRange] {
            let count64 = try data.u64(at: 0)
            guard count64 <= UInt64(max(0, data.count - 16) / 16) else {
                throw FormatError(.truncated, "the 64-bit memory list declares \(count64) entries that do not fit",
                                  offset: data.baseOffset)
            }
            var rva = try data.u64(at: 8)
            var ranges: [MemoryRange] = []
            for index in 0..<Int(count64) {
                let start = try data.u64(at: 16 + index * 16)
                let size = try data.u64(at: 24 + index * 16)
                guard rva <= UInt64(file.count), size <= UInt64(file.count) - rva else {
                    throw FormatError(.truncated, "64-bit memory range \(index) extends past the end of the file",
                                      offset: data.baseOffset + UInt64(24 + index * 16))
                }
                ranges.append(MemoryRange(start: start, location: Int(rva)..<Int(rva + size)))
                rva += size
            }
            return ranges
        }

        static func exception(_ data: ByteReader, file: ByteReader) throws(FormatError) -> Exception {
            try data.check(0, 168, "the exception stream")
            return Exception(threadID: try data.u32(at: 0), code: try data.u32(at: 8), flags: try data.u32(at: 12),
                             address: try data.u64(at: 24),
                             context: try location(file, at: Int(data.baseOffset) + 160, "the exception's context"))
        }

        static func systemInfo(_ data: ByteReader, file: ByteReader) throws(FormatError) -> SystemInfo {
            try data.check(0, 56, "the system info stream")
            let csdRVA = Int(try data.u32(at: 24))
            var vendor: String?
            let architecture = try data.u16(at: 0)
            if architecture == 0 || architecture == 9 {  // x86, AMD64: the CPUID vendor, 3 words
                var bytes: [UInt8] = []
                for word in 0..<3 {
                    let value = try data.u32(at: 32 + 4 * word)
                    bytes += [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
                }
                vendor = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            return SystemInfo(processorArchitecture: architecture, processorLevel: try data.u16(at: 2),
                              processorRevision: try data.u16(at: 4), processorCount: try data.u8(at: 6),
                              platformID: try data.u32(at: 20),
                              csdVersion: csdRVA == 0 ? nil : try utf16String(file, at: csdRVA), vendor: vendor)
        }
    }
}

extension Minidump {
    /// `count` bytes (1 to 8) of the process's memory at `address`, little-endian, when the dump
    /// holds them (the thread stacks and the memory lists).
    public func read(_ address: UInt64, size count: Int) -> UInt64? {
        guard count >= 1, count <= 8, let location = fileLocation(of: address, count: count) else { return nil }
        return try? storage.withBytes { (bytes) throws(FormatError) in try ByteReader(bytes).unsigned(at: location, size: count) }
    }

    /// The file offset of `count` bytes at `address`, when one range holds all of them.
    func fileLocation(of address: UInt64, count: Int) -> Int? {
        func inside(_ range: MemoryRange) -> Int? {
            guard address >= range.start else { return nil }
            let offset = address - range.start
            guard offset <= UInt64(range.location.count), UInt64(count) <= UInt64(range.location.count) - offset else { return nil }
            return range.location.lowerBound + Int(offset)
        }
        // Sorted by start: the last ranges starting at or below the address (ranges may overlap
        // in a hostile dump; the eight nearest are tried, so a read costs a binary search).
        func search(_ ranges: [MemoryRange]) -> Int? {
            var low = 0, high = ranges.count
            while low < high {
                let middle = (low + high) / 2
                if ranges[middle].start <= address { low = middle + 1 } else { high = middle }
            }
            var index = low - 1
            while index >= 0 && index >= low - 8 {
                if let found = inside(ranges[index]) { return found }
                index -= 1
            }
            return nil
        }
        return search(stacksByStart) ?? search(memory)
    }

    /// The bytes at `location` in the file (a context, a stream).
    public func bytes(_ location: Range<Int>) -> [UInt8] {
        (try? storage.withBytes { (bytes) throws(FormatError) -> [UInt8] in
            guard location.lowerBound >= 0, location.upperBound <= bytes.count else { return [] }
            return Array(bytes[location])
        }) ?? []
    }

    /// The thread the exception names, if any.
    public var crashedThread: Thread? {
        guard let exception else { return nil }
        return threads.first { $0.id == exception.threadID }
    }

    /// Breakpad's text for the exception (`SIGSEGV /0x00000000`, `SIGSEGV /SEGV_MAPERR`).
    public var crashReason: String? {
        guard let exception else { return nil }
        let signals: [UInt32: String] = [1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
                                         7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM",
                                         31: "SIGSYS"]
        guard system?.platformID == 0x8201, let name = signals[exception.code] else {
            return "0x" + String(exception.code, radix: 16)
        }
        let segv = [1: "SEGV_MAPERR", 2: "SEGV_ACCERR"]
        if exception.code == 11, let flag = segv[Int(exception.flags)] { return name + " /" + flag }
        let hex = String(exception.flags, radix: 16)
        return name + " /0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }
}
