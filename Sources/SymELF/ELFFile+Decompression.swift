import CLibz
import CZstd
import SymBytes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ELFFile {
    /// Largest decompressed section accepted, whatever the file declares.
    public static let maximumDecompressedSize: UInt64 = 8 << 30
    /// Largest accepted ratio of declared decompressed size to compressed size. zlib cannot exceed
    /// about 1032:1; debug sections stay far below this, bombs do not.
    public static let maximumCompressionRatio: UInt64 = 1000
    /// Largest accepted ratio of what all compressed sections together declare to the whole
    /// file's size. Debug files on Debian 12 stay under 13:1 (zlib or zstd, whole file; one
    /// section reaches 83:1), so a file declaring more is a bomb, not debug information: a 1.1 MB
    /// file may declare 110 MB, not the gigabyte a single section's 1000:1 would let through.
    public static let maximumFileExpansion: UInt64 = 100
    /// What compressed sections may declare in all whatever the file's size (small objects).
    public static let minimumDecompressionAllowance: UInt64 = 16 << 20

    /// What the compressed sections of this file may declare in all: `maximumFileExpansion`
    /// times the file's size, at least `minimumDecompressionAllowance`.
    public var decompressionAllowance: UInt64 {
        max(Self.minimumDecompressionAllowance, UInt64(storage.bytes.count) * Self.maximumFileExpansion)
    }

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
        try checkDeclaredSize(declaredSize, payloadCount: payload.count, offset: payloadOffset,
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
    /// us allocate: the section's own (size, ratio to its compressed bytes) and the file's (all
    /// compressed sections together against the file's size).
    func checkDeclaredSize(_ declaredSize: UInt64, payloadCount: Int, offset: UInt64,
                           sectionName: String) throws(FormatError) {
        guard declaredSize <= Self.maximumDecompressedSize else {
            throw FormatError(.limitExceeded,
                              "section \(sectionName) declares \(declaredSize) decompressed bytes (limit \(Self.maximumDecompressedSize))",
                              offset: offset)
        }
        // payloadCount <= the file size, so the product fits in 64 bits.
        guard declaredSize <= UInt64(payloadCount) * Self.maximumCompressionRatio else {
            throw FormatError(.limitExceeded,
                              "section \(sectionName) declares \(declaredSize) bytes from \(payloadCount) compressed bytes (ratio limit \(Self.maximumCompressionRatio))",
                              offset: offset)
        }
        guard declaredDecompressedBytes <= decompressionAllowance else {
            throw FormatError(.limitExceeded,
                              "the compressed sections declare \(declaredDecompressedBytes) bytes in all, over \(Self.maximumFileExpansion) times the file's \(storage.bytes.count) bytes (limit \(decompressionAllowance)): not decompressing \(sectionName)",
                              offset: offset)
        }
    }

    /// The sum of the sizes the compressed sections' headers declare (saturating). Headers that
    /// cannot be read count nothing here: they throw when their section is read.
    static func declaredDecompressedBytes(reader: ByteReader, header: ELFHeader, sections: [ELFSection]) -> UInt64 {
        var total: UInt64 = 0
        for section in sections where section.isCompressed && !section.isNoBits {
            guard let start = try? ByteReader.int(section.offset, "section offset") else { continue }
            let declared: UInt64?
            if section.flags & ELF.SHF_COMPRESSED != 0 {
                declared = header.is64Bit ? try? reader.u64(at: start &+ 8) : (try? reader.u32(at: start &+ 4)).map(UInt64.init)
            } else {
                var bigEndian = reader
                bigEndian.littleEndian = false
                declared = try? bigEndian.u64(at: start &+ 4)
            }
            let (sum, overflow) = total.addingReportingOverflow(declared ?? 0)
            total = overflow ? .max : sum
        }
        return total
    }

    /// Decompresses `payload` (checked by `compressedPayload`), which must yield exactly
    /// `declaredSize` bytes. The buffer grows with what the stream yields (doubling from about
    /// four times the payload), so a size the data does not bear out is never allocated.
    static func decompress(_ payload: UnsafeRawBufferPointer, algorithm: UInt32, declaredSize: UInt64,
                           offset: UInt64, sectionName: String) throws(FormatError) -> OwnedBuffer {
        let size = Int(declaredSize)
        var output = try GrowingOutput(declaredSize: size, initialCapacity: payload.count.multipliedReportingOverflow(by: 4).partialValue,
                                       offset: offset, sectionName: sectionName)
        do throws(FormatError) {
            switch algorithm {
            case ELF.ELFCOMPRESS_ZLIB:
                try inflate(payload, into: &output)
            case ELF.ELFCOMPRESS_ZSTD:
                try zstdDecompress(payload, into: &output)
            default:
                preconditionFailure("compressedPayload accepts zlib and zstd only")
            }
            guard output.produced == size else {
                throw FormatError(.decompression, "section \(sectionName) decompressed to \(output.produced) bytes, declared \(size)",
                                  offset: offset)
            }
        } catch {
            output.discard()
            throw error
        }
        return output.finished()
    }

    /// A `malloc`ed buffer that a decompressor fills from the start, grown on demand up to one
    /// byte past the declared size (a stream that fills that byte goes on too long).
    struct GrowingOutput {
        private(set) var base: UnsafeMutableRawPointer
        private(set) var capacity: Int
        /// Bytes written.
        var produced = 0
        let declaredSize: Int
        let offset: UInt64
        let sectionName: String
        private var limit: Int { declaredSize + 1 }

        init(declaredSize: Int, initialCapacity: Int, offset: UInt64, sectionName: String) throws(FormatError) {
            self.declaredSize = declaredSize
            self.offset = offset
            self.sectionName = sectionName
            capacity = min(declaredSize + 1, max(64 << 10, initialCapacity))
            guard let base = malloc(capacity) else {
                throw FormatError(.limitExceeded, "cannot allocate \(capacity) bytes for section \(sectionName)", offset: offset)
            }
            self.base = base
        }

        /// Where the next bytes go, and how many fit.
        var room: (start: UnsafeMutableRawPointer, count: Int) { (base + produced, capacity - produced) }

        /// Makes room when the buffer is full: doubles it, up to the limit; past the declared
        /// size the stream is wrong.
        mutating func makeRoom() throws(FormatError) {
            guard produced == capacity else { return }
            guard capacity < limit else {
                throw FormatError(.decompression, "section \(sectionName) does not end at its declared \(declaredSize) bytes",
                                  offset: offset)
            }
            let larger = min(limit, capacity.multipliedReportingOverflow(by: 2).partialValue)
            guard let moved = realloc(base, larger) else {
                throw FormatError(.limitExceeded, "cannot allocate \(larger) bytes for section \(sectionName)", offset: offset)
            }
            base = moved
            capacity = larger
        }

        /// Frees the buffer (on failure).
        func discard() {
            free(base)
        }

        /// The bytes, the spare room given back.
        consuming func finished() -> OwnedBuffer {
            var base = self.base
            if capacity > max(produced, 1), let fitted = realloc(base, max(produced, 1)) { base = fitted }
            return OwnedBuffer(adopting: base, count: produced)
        }
    }

    /// zlib (RFC 1950), a step at a time.
    private static func inflate(_ payload: UnsafeRawBufferPointer, into output: inout GrowingOutput) throws(FormatError) {
        var stream = z_stream()
        guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw FormatError(.decompression, "zlib cannot start on section \(output.sectionName)", offset: output.offset)
        }
        defer { inflateEnd(&stream) }
        var consumed = 0
        while true {
            try output.makeRoom()
            // zlib counts in 32-bit words: feed and take at most 1 GiB a call.
            let inputChunk = min(payload.count - consumed, 1 << 30)
            let room = output.room
            let outputChunk = min(room.count, 1 << 30)
            stream.next_in = UnsafeMutablePointer(mutating: (payload.baseAddress! + consumed).assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(inputChunk)
            stream.next_out = room.start.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(outputChunk)
            let status = CLibz.inflate(&stream, Z_NO_FLUSH)
            consumed += inputChunk - Int(stream.avail_in)
            output.produced += outputChunk - Int(stream.avail_out)
            switch status {
            case Z_STREAM_END:
                return
            case Z_OK:
                continue
            case Z_BUF_ERROR where stream.avail_out == 0:
                continue
            case Z_BUF_ERROR:
                // No progress possible with output room left: the compressed data ran out.
                throw FormatError(.decompression, "section \(output.sectionName) inflated to \(output.produced) bytes, declared \(output.declaredSize)",
                                  offset: output.offset)
            default:
                throw FormatError(.decompression, "zlib error \(status) in section \(output.sectionName)", offset: output.offset)
            }
        }
    }

    /// zstd (RFC 8878; one frame or more), a step at a time.
    private static func zstdDecompress(_ payload: UnsafeRawBufferPointer, into output: inout GrowingOutput) throws(FormatError) {
        guard let context = ZSTD_createDStream() else {
            throw FormatError(.decompression, "zstd cannot start on section \(output.sectionName)", offset: output.offset)
        }
        defer { ZSTD_freeDStream(context) }
        var consumed = 0
        while true {
            try output.makeRoom()
            let room = output.room
            var inBuffer = ZSTD_inBuffer(src: payload.baseAddress! + consumed, size: payload.count - consumed, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: room.start, size: room.count, pos: 0)
            let status = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
            consumed += inBuffer.pos
            output.produced += outBuffer.pos
            if ZSTD_isError(status) != 0 {
                let reason = String(cString: ZSTD_getErrorName(status))
                throw FormatError(.decompression, "zstd error in section \(output.sectionName): \(reason)", offset: output.offset)
            }
            // 0: a frame is complete; the section is one frame or more, and ends with the input.
            if status == 0 && consumed == payload.count { return }
            if inBuffer.pos == 0 && outBuffer.pos == 0 {
                throw FormatError(.decompression, "section \(output.sectionName) decompressed to \(output.produced) bytes, declared \(output.declaredSize)",
                                  offset: output.offset)
            }
        }
    }
}
