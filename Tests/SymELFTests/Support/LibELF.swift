import CElf
#if canImport(Glibc)
import Glibc
#endif

/// What elfutils' libelf reads from a file: the independent oracle for the differential tests.
struct LibELFView {
    struct Section: Equatable, CustomStringConvertible {
        var name: String, type: UInt32, flags: UInt64, address: UInt64, offset: UInt64, size: UInt64
        var link: UInt32, info: UInt32, alignment: UInt64, entrySize: UInt64
        var description: String { "\(name) type=\(type) flags=\(flags) addr=\(address) off=\(offset) size=\(size)" }
    }
    struct Symbol: Equatable, CustomStringConvertible {
        var name: String, value: UInt64, size: UInt64, type: UInt8, binding: UInt8, sectionIndex: UInt16
        var isDynamic: Bool
        var description: String { "\(name) value=\(value) size=\(size) type=\(type) bind=\(binding)" }
    }
    struct Segment: Equatable {
        var type: UInt32, flags: UInt32, offset: UInt64, virtualAddress: UInt64, fileSize: UInt64
        var memorySize: UInt64, alignment: UInt64
    }

    var type: UInt16 = 0
    var machine: UInt16 = 0
    var entry: UInt64 = 0
    var is64Bit = false
    var sections: [Section] = []
    var segments: [Segment] = []
    var symbols: [Symbol] = []
    /// Decompressed contents of compressed sections, by section name (libelf `elf_compress`).
    var decompressed: [String: [UInt8]] = [:]

    struct Failure: Error, CustomStringConvertible {
        let message: String
        var description: String { "libelf: \(message): \(String(cString: elf_errmsg(-1)))" }
    }

    /// Reads `bytes` with libelf (`elf_memory`); with `decompress`, also inflates every
    /// compressed section through `elf_compress` / `elf_compress_gnu`.
    init(bytes: [UInt8], decompress: Bool = false) throws(Failure) {
        var image = bytes
        let result: Result<LibELFView, Failure> = image.withUnsafeMutableBytes { buffer in
            do throws(Failure) {
                return .success(try LibELFView(memory: buffer, decompress: decompress))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    private init(memory: UnsafeMutableRawBufferPointer, decompress: Bool) throws(Failure) {
        elf_version(UInt32(EV_CURRENT))
        guard let elf = elf_memory(memory.baseAddress!.assumingMemoryBound(to: CChar.self), memory.count) else {
            throw Failure(message: "elf_memory")
        }
        defer { elf_end(elf) }

        var ehdr = GElf_Ehdr()
        guard gelf_getehdr(elf, &ehdr) != nil else { throw Failure(message: "gelf_getehdr") }
        type = ehdr.e_type
        machine = ehdr.e_machine
        entry = ehdr.e_entry
        is64Bit = gelf_getclass(elf) == ELFCLASS64

        var segmentCount = 0
        guard elf_getphdrnum(elf, &segmentCount) == 0 else { throw Failure(message: "elf_getphdrnum") }
        for index in 0..<segmentCount {
            var phdr = GElf_Phdr()
            guard gelf_getphdr(elf, Int32(index), &phdr) != nil else { throw Failure(message: "gelf_getphdr") }
            segments.append(Segment(type: phdr.p_type, flags: phdr.p_flags, offset: phdr.p_offset,
                                    virtualAddress: phdr.p_vaddr, fileSize: phdr.p_filesz,
                                    memorySize: phdr.p_memsz, alignment: phdr.p_align))
        }

        var sectionCount = 0
        guard elf_getshdrnum(elf, &sectionCount) == 0 else { throw Failure(message: "elf_getshdrnum") }
        var nameIndex = 0
        guard elf_getshdrstrndx(elf, &nameIndex) == 0 else { throw Failure(message: "elf_getshdrstrndx") }
        for index in 0..<sectionCount {
            guard let scn = elf_getscn(elf, index) else { throw Failure(message: "elf_getscn \(index)") }
            var shdr = GElf_Shdr()
            guard gelf_getshdr(scn, &shdr) != nil else { throw Failure(message: "gelf_getshdr \(index)") }
            let name = elf_strptr(elf, nameIndex, Int(shdr.sh_name)).map { String(cString: $0) } ?? ""
            sections.append(Section(name: name, type: shdr.sh_type, flags: shdr.sh_flags,
                                    address: shdr.sh_addr, offset: shdr.sh_offset, size: shdr.sh_size,
                                    link: shdr.sh_link, info: shdr.sh_info, alignment: shdr.sh_addralign,
                                    entrySize: shdr.sh_entsize))
        }

        for index in 0..<sectionCount {
            let section = sections[index]
            guard section.type == UInt32(SHT_SYMTAB) || section.type == UInt32(SHT_DYNSYM) else { continue }
            guard let scn = elf_getscn(elf, index), let data = elf_getdata(scn, nil) else {
                throw Failure(message: "elf_getdata \(section.name)")
            }
            let count = Int(section.size / section.entrySize)
            for symbolIndex in 1..<max(count, 1) {
                var sym = GElf_Sym()
                guard gelf_getsym(data, Int32(symbolIndex), &sym) != nil else {
                    throw Failure(message: "gelf_getsym \(symbolIndex)")
                }
                guard let name = elf_strptr(elf, Int(section.link), Int(sym.st_name)) else {
                    throw Failure(message: "elf_strptr symbol \(symbolIndex)")
                }
                symbols.append(Symbol(name: String(cString: name), value: sym.st_value, size: sym.st_size,
                                      type: sym.st_info & 0xf, binding: sym.st_info >> 4,
                                      sectionIndex: sym.st_shndx,
                                      isDynamic: section.type == UInt32(SHT_DYNSYM)))
            }
        }

        guard decompress else { return }
        for index in 0..<sectionCount {
            let section = sections[index]
            guard section.type != UInt32(SHT_NOBITS), let scn = elf_getscn(elf, index) else { continue }
            if section.flags & UInt64(SHF_COMPRESSED) != 0 {
                guard elf_compress(scn, 0, 0) >= 0 else { throw Failure(message: "elf_compress \(section.name)") }
            } else if section.name.hasPrefix(".zdebug") {
                guard elf_compress_gnu(scn, 0, 0) >= 0 else {
                    throw Failure(message: "elf_compress_gnu \(section.name)")
                }
            } else {
                continue
            }
            guard let data = elf_getdata(scn, nil) else { throw Failure(message: "elf_getdata \(section.name)") }
            let bytes = data.pointee.d_buf.map {
                Array(UnsafeRawBufferPointer(start: $0, count: data.pointee.d_size))
            } ?? []
            decompressed[section.name] = bytes
        }
    }
}
