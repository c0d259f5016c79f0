import CLibz
import CZstd
import SymBytes

extension ELFFile {
    /// Largest decompressed section accepted, whatever the file declares.
    public static let maximumDecompressedSize: UInt64 = 8 << 30
    /// Largest accepted ratio of declared decompressed size to compressed size. zlib cannot exceed
    /// about 1032:1; debug sections stay far below this, bombs do not.
    public static let maximumCompressionRatio: UInt64 = 1000

    /// A compressed section's payload and what its header declares.
    struct CompressedPayload {
        var algorithm: UInt32
        var declaredSize: UInt64
        var bytes: UnsafeRawBufferPointer
        /// File offset of the payload.
        var offset: UInt64
    }

    /// Reads a compressed section's header, either `SHF_COMPRESSED` (gABI "Section Compression":
    /// an `ElfN_Chdr` then the stream) or GNU `.zdebug` ("ZLIB", a big-endian 64-bit size, then a
    /// zlib stream). Throws when the declared size is over the limits, there is no payload, or the
    /// algorithm is neither zlib nor zstd.
    func compressedPayload(of section: ELFSection, raw: UnsafeRawBufferPointer) throws(FormatError) -> CompressedPayload {
        let reader = ByteReader(raw, littleEndian: header.isLittleEndian, baseOffset: section.offset)
        let algorithm: UInt32
        let declaredSize: UInt64
        let payloadStart: Int
        if section.flags & ELF.SHF_COMPRESSED != 0 {
            algorithm = try reader.u32(at: 0)
            if header.is64Bit {
                // Elf64_Chdr: ch_type, ch_reserved, ch_size (8), ch_addralign (8).
                try reader.check(0, 24, "compression header")
                declaredSize = try reader.u64(at: 8)
                payloadStart = 24
            } else {
                // Elf32_Chdr: ch_type, ch_size, ch_addralign.
                try reader.check(0, 12, "compression header")
                declaredSize = UInt64(try reader.u32(at: 4))
                payloadStart = 12
            }
        } else {
            try reader.check(0, 12, "GNU compressed section header")
            guard raw[0] == UInt8(ascii: "Z"), raw[1] == UInt8(ascii: "L"), raw[2] == UInt8(ascii: "I"),
                  raw[3] == UInt8(ascii: "B") else {
                throw FormatError(.badMagic, "section \(section.name) lacks the \"ZLIB\" header",
                                  offset: section.offset)
            }
            var bigEndian = reader
            bigEndian.littleEndian = false
            algorithm = ELF.ELFCOMPRESS_ZLIB
            declaredSize = try bigEndian.u64(at: 4)
            payloadStart = 12
        }
        let payload = try reader.slice(payloadStart, raw.count - payloadStart)
        let payloadOffset = section.offset &+ UInt64(payloadStart)
        try Self.checkDeclaredSize(declaredSize, payloadCount: payload.count, offset: payloadOffset,
                                   sectionName: section.name)
        guard payload.count > 0 else {
            throw FormatError(.decompression, "section \(section.name) has no compressed data", offset: payloadOffset)
        }
        guard algorithm == ELF.ELFCOMPRESS_ZLIB || algorithm == ELF.ELFCOMPRESS_ZSTD else {
            throw FormatError(.unsupported, "section \(section.name) uses compression type \(algorithm)",
                              offset: payloadOffset)
        }
        return CompressedPayload(algorithm: algorithm, declaredSize: declaredSize, bytes: payload, offset: payloadOffset)
    }

    /// Decompresses a compressed section's raw bytes (see `compressedPayload`).
    func decompressedContents(of section: ELFSection, raw: UnsafeRawBufferPointer) throws(FormatError) -> SectionContents {
        let payload = try compressedPayload(of: section, raw: raw)
        let buffer = try Self.decompress(payload.bytes, algorithm: payload.algorithm, declaredSize: payload.declaredSize,
                                         offset: payload.offset, sectionName: section.name)
        // The compressed bytes are not read again: their pages go back while the decompressed
        // copy is in use (libc's debug file: 4 MB next to 10 MB of DWARF).
        if case .mapped = storage { FileMappedPages.release(raw) }
        return SectionContents(storage: .owned(buffer), start: 0, count: buffer.count)
    }

    /// A compressed section as a stream to decompress in order (`SectionStream`), or nil when the
    /// section is stored uncompressed (or has no bytes) and `contents(of:)` gives it as it is.
    public func streamedContents(of section: ELFSection) throws(FormatError) -> SectionStream? {
        guard section.isCompressed, !section.isNoBits else { return nil }
        do {
            let reader = ByteReader(storage.bytes, littleEndian: header.isLittleEndian)
            let raw = try section.fileBytes(in: reader)
            let payload = try compressedPayload(of: section, raw: raw)
            guard payload.declaredSize > 0 else { return nil }
            return try SectionStream(payload: payload.bytes, owner: storage, isZstd: payload.algorithm == ELF.ELFCOMPRESS_ZSTD,
                                     declaredSize: Int(payload.declaredSize), payloadOffset: payload.offset,
                                     sectionName: section.name)
        } catch {
            throw error.at(path: path)
        }
    }

    /// Refuses a declared decompressed size over the limits, so that a forged header cannot make
    /// us allocate.
    static func checkDeclaredSize(_ declaredSize: UInt64, payloadCount: Int, offset: UInt64,
                                  sectionName: String) throws(FormatError) {
        guard declaredSize <= maximumDecompressedSize else {
            throw FormatError(.limitExceeded,
                              "section \(sectionName) declares \(declaredSize) decompressed bytes (limit \(maximumDecompressedSize))",
                              offset: offset)
        }
        // payloadCount <= the file size, so the product fits in 64 bits.
        guard declaredSize <= UInt64(payloadCount) * maximumCompressionRatio else {
            throw FormatError(.limitExceeded,
                              "section \(sectionName) declares \(declaredSize) bytes from \(payloadCount) compressed bytes (ratio limit \(maximumCompressionRatio))",
                              offset: offset)
        }
    }

    /// Inflates `payload` (checked by `compressedPayload`) into a buffer of exactly
    /// `declaredSize` bytes.
    static func decompress(_ payload: UnsafeRawBufferPointer, algorithm: UInt32, declaredSize: UInt64,
                           offset: UInt64, sectionName: String) throws(FormatError) -> OwnedBuffer {
        let source = payload.baseAddress!
        let size = Int(declaredSize)
        return try OwnedBuffer(count: size) { (destination) throws(FormatError) in
            let target = destination.baseAddress!
            switch algorithm {
            case ELF.ELFCOMPRESS_ZLIB:
                var produced = uLongf(size)
                let status = uncompress(target.assumingMemoryBound(to: Bytef.self), &produced,
                                        source.assumingMemoryBound(to: Bytef.self), uLong(payload.count))
                guard status == Z_OK else {
                    throw FormatError(.decompression, "zlib error \(status) in section \(sectionName)",
                                      offset: offset)
                }
                guard produced == uLongf(size) else {
                    throw FormatError(.decompression,
                                      "section \(sectionName) inflated to \(produced) bytes, declared \(size)",
                                      offset: offset)
                }
            case ELF.ELFCOMPRESS_ZSTD:
                let produced = ZSTD_decompress(target, size, source, payload.count)
                if ZSTD_isError(produced) != 0 {
                    let reason = String(cString: ZSTD_getErrorName(produced))
                    throw FormatError(.decompression, "zstd error in section \(sectionName): \(reason)",
                                      offset: offset)
                }
                guard produced == size else {
                    throw FormatError(.decompression,
                                      "section \(sectionName) decompressed to \(produced) bytes, declared \(size)",
                                      offset: offset)
                }
            default:
                preconditionFailure("compressedPayload accepts zlib and zstd only")
            }
        }
    }
}
