import SymBytes

/// Crashpad's annotations (`MinidumpCrashpadInfo`, stream 0x43500001): the process's simple
/// key/value pairs and each module's simple pairs, list annotations and string annotation objects.
public struct CrashpadAnnotations: Sendable, Equatable {
    /// Process-wide simple annotations.
    public var simple: [String: String] = [:]
    /// Per module (index into the module list): its annotations.
    public var modules: [Int: ModuleAnnotations] = [:]

    /// One module's annotations.
    public struct ModuleAnnotations: Sendable, Equatable {
        /// `list_annotations`: strings.
        public var list: [String] = []
        /// `simple_annotations`: key/value pairs.
        public var simple: [String: String] = [:]
        /// `annotation_objects` of string type (type 1), by name.
        public var objects: [String: String] = [:]
    }

    /// Most entries read from one dictionary or list.
    static let maximumEntries = 4096

    init(_ data: ByteReader, file: ByteReader) throws(FormatError) {
        // version u32, report_id (16), client_id (16), simple_annotations (loc), module_list (loc)
        try data.check(0, 52, "the Crashpad info stream")
        let base = Int(data.baseOffset)
        if let location = try Self.optionalLocation(file, at: base + 36) {
            simple = try Self.dictionary(file, location)
        }
        if let location = try Self.optionalLocation(file, at: base + 44) {
            let count = try Self.count(file, location, entrySize: 12)
            for index in 0..<count {
                let entry = location.lowerBound + 4 + index * 12
                let moduleIndex = Int(try file.u32(at: entry))
                guard let info = try Self.optionalLocation(file, at: entry + 4) else { continue }
                try file.check(info.lowerBound, 28, "a module's Crashpad info")
                var module = ModuleAnnotations()
                if let list = try Self.optionalLocation(file, at: info.lowerBound + 4) {
                    let listCount = try Self.count(file, list, entrySize: 4)
                    for item in 0..<listCount {
                        module.list.append(try Self.utf8String(file, at: Int(try file.u32(at: list.lowerBound + 4 + item * 4))))
                    }
                }
                if let dictionary = try Self.optionalLocation(file, at: info.lowerBound + 12) {
                    module.simple = try Self.dictionary(file, dictionary)
                }
                if info.count >= 28, let objects = try Self.optionalLocation(file, at: info.lowerBound + 20) {
                    let objectCount = try Self.count(file, objects, entrySize: 12)
                    for item in 0..<objectCount {
                        let object = objects.lowerBound + 4 + item * 12
                        let name = try Self.utf8String(file, at: Int(try file.u32(at: object)))
                        guard try file.u16(at: object + 4) == 1 else { continue }  // string
                        module.objects[name] = try Self.utf8String(file, at: Int(try file.u32(at: object + 8)))
                    }
                }
                modules[moduleIndex] = module
            }
        }
    }

    /// A location descriptor; nil when empty.
    static func optionalLocation(_ file: ByteReader, at offset: Int) throws(FormatError) -> Range<Int>? {
        let location = try Minidump.Parsed.location(file, at: offset, "a Crashpad location")
        return location.isEmpty ? nil : location
    }

    /// The entry count at the start of `location`, checked against its size and the limit.
    static func count(_ file: ByteReader, _ location: Range<Int>, entrySize: Int) throws(FormatError) -> Int {
        let count = Int(try file.u32(at: location.lowerBound))
        guard count <= maximumEntries, count <= max(0, location.count - 4) / entrySize else {
            throw FormatError(.invalidValue, "Crashpad list of \(count) entries does not fit in \(location.count) bytes",
                              offset: UInt64(location.lowerBound))
        }
        return count
    }

    static func dictionary(_ file: ByteReader, _ location: Range<Int>) throws(FormatError) -> [String: String] {
        var result: [String: String] = [:]
        for index in 0..<(try count(file, location, entrySize: 8)) {
            let entry = location.lowerBound + 4 + index * 8
            result[try utf8String(file, at: Int(try file.u32(at: entry)))] = try utf8String(file, at: Int(try file.u32(at: entry + 4)))
        }
        return result
    }

    /// A `MinidumpUTF8String` (or byte array): length, then bytes.
    static func utf8String(_ file: ByteReader, at offset: Int) throws(FormatError) -> String {
        let length = Int(try file.u32(at: offset))
        guard length <= Minidump.maximumStringBytes else {
            throw FormatError(.invalidValue, "string of \(length) bytes", offset: UInt64(offset))
        }
        return String(decoding: try file.slice(offset + 4, length, "a string"), as: UTF8.self)
    }
}
