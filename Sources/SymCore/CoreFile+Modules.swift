import SymBytes
import SymELF

extension CoreFile {
    /// A file mapped into the process, as one module: its mappings' span and, when the core kept
    /// the page holding its ELF header and notes, its GNU build-id read from that memory.
    public struct Module: Sendable, Equatable {
        /// The path the process mapped.
        public var path: String
        /// The lowest address of its mappings (the one at file offset 0 when there is one).
        public var start: UInt64
        /// One past the highest address of its mappings.
        public var end: UInt64
        /// The build-id from the core's memory, lowercase hex, when the core kept it.
        public var buildID: String?
    }

    /// The mapped files that start with a mapping of their first byte (ELF images: executables,
    /// libraries, the loader), in address order, with their build-ids from the core's memory.
    /// Files mapped only from the middle (data files, a second view) are not modules.
    public var modules: [Module] {
        var modules: [Module] = []
        var byPath: [String: Int] = [:]
        for range in mappedFiles {
            if let index = byPath[range.path], range.start >= modules[index].start {
                modules[index].end = max(modules[index].end, range.end)
                continue
            }
            guard range.fileOffset == 0 else { continue }
            byPath[range.path] = modules.count
            modules.append(Module(path: range.path, start: range.start, end: range.end, buildID: nil))
        }
        for index in modules.indices { modules[index].buildID = buildID(ofImageAt: modules[index].start) }
        return modules
    }

    /// The GNU build-id of the ELF image whose header is at `address` in the core's memory: its
    /// program headers, the `PT_NOTE` segments they place (relative to the first `PT_LOAD`),
    /// the `NT_GNU_BUILD_ID` note among them. Nil when the memory is absent or is no 64-bit
    /// little-endian ELF image.
    public func buildID(ofImageAt address: UInt64) -> String? {
        guard let header = bytes(at: address, count: 64), ELF.hasMagic(header), header[4] == ELF.ELFCLASS64,
              header[5] == ELF.ELFDATA2LSB else { return nil }
        func word(_ bytes: [UInt8], _ offset: Int, _ size: Int) -> UInt64 {
            (0..<size).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        let tableOffset = word(header, 32, 8), entrySize = Int(word(header, 54, 2)), count = Int(word(header, 56, 2))
        guard entrySize >= 56, count > 0, count < 256, tableOffset < 1 << 20,
              let table = bytes(at: address &+ tableOffset, count: count * entrySize) else { return nil }
        // The image's bias: where it is minus where its first PT_LOAD says it is (page-aligned).
        var firstLoad: UInt64?
        for index in 0..<count where word(table, index * entrySize, 4) == 1 {
            firstLoad = word(table, index * entrySize + 16, 8) & ~0xfff
            break
        }
        guard let firstLoad else { return nil }
        let bias = address &- firstLoad
        for index in 0..<count where word(table, index * entrySize, 4) == 4 {
            let entry = index * entrySize
            let size = Int(min(word(table, entry + 32, 8), 1 << 16))
            guard let notes = bytes(at: bias &+ word(table, entry + 16, 8), count: size) else { continue }
            // Notes: namesz, descsz, type, name and descriptor each padded to the segment's
            // alignment (4 for the GNU notes; 8-aligned segments pad to 8).
            let alignment = word(table, entry + 48, 8) == 8 ? 8 : 4
            var position = 0
            while notes.count - position >= 12 {
                let nameSize = Int(word(notes, position, 4)), descriptorSize = Int(word(notes, position + 4, 4))
                let type = word(notes, position + 8, 4)
                let descriptorStart = position + 12 + (nameSize + alignment - 1) / alignment * alignment
                guard descriptorStart <= notes.count, descriptorSize <= notes.count - descriptorStart else { break }
                // NT_GNU_BUILD_ID (3), owner "GNU\0".
                if type == 3 && nameSize == 4 && notes[position + 12] == 0x47 && notes[position + 13] == 0x4e
                    && notes[position + 14] == 0x55 && descriptorSize > 0 {
                    return hexString(notes[descriptorStart..<(descriptorStart + descriptorSize)])
                }
                position = descriptorStart + (descriptorSize + alignment - 1) / alignment * alignment
            }
        }
        return nil
    }
}
