import CLzma
import CZstd
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// Where the core reader (`StreamedCore`) gets its bytes: a file descriptor read front to back
/// (the kernel's pipe, a core file), or a zstd-compressed file decompressed as it is read
/// (systemd-coredump's `.zst` and `.xz` cores), in constant memory either way.
enum CoreStreamSource {
    /// `read(2)` of `descriptor` (EINTR retried; an error ends the reading as an I/O error).
    static func reader(_ descriptor: Int32) -> (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int {
        { (buffer) throws(FormatError) -> Int in
            while true {
                let count = read(descriptor, buffer.baseAddress, buffer.count)
                if count >= 0 { return count }
                if errno == EINTR { continue }
                throw FormatError(.io, "reading the core: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The zstd frames of `descriptor` decompressed (`ZSTD_decompressStream`, 128 KiB of input
    /// at a time). Input that ends inside a frame, or that is not zstd, is an error.
    final class Zstd {
        private let descriptor: Int32
        private let context: OpaquePointer
        private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 17, alignment: 16)
        private var inputStart = 0, inputEnd = 0
        private var ended = false
        /// The last `ZSTD_decompressStream` answer: 0 when a frame is complete.
        private var pending = 0

        init(descriptor: Int32) throws(FormatError) {
            guard let context = ZSTD_createDStream() else { throw FormatError(.decompression, "zstd: cannot create a decompression stream") }
            self.descriptor = descriptor
            self.context = context
        }

        deinit {
            ZSTD_freeDStream(context)
            input.deallocate()
        }

        /// Fills `buffer` with decompressed bytes; 0 at the end of the last frame.
        func read(into buffer: UnsafeMutableRawBufferPointer) throws(FormatError) -> Int {
            while true {
                if inputStart == inputEnd && !ended {
                    let count = try CoreStreamSource.reader(descriptor)(input)
                    if count == 0 { ended = true } else {
                        inputStart = 0
                        inputEnd = count
                    }
                }
                if inputStart == inputEnd && ended {
                    guard pending == 0 else { throw FormatError(.decompression, "zstd: the compressed core ends inside a frame") }
                    return 0
                }
                var inBuffer = ZSTD_inBuffer(src: input.baseAddress! + inputStart, size: inputEnd - inputStart, pos: 0)
                var outBuffer = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
                let status = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
                if ZSTD_isError(status) != 0 {
                    throw FormatError(.decompression, "zstd: \(String(cString: ZSTD_getErrorName(status)))")
                }
                pending = status
                inputStart += inBuffer.pos
                if outBuffer.pos > 0 { return outBuffer.pos }
            }
        }
    }

    /// The xz streams of `descriptor` decompressed (liblzma's stream decoder, concatenated
    /// streams, no memory limit beyond the format's own dictionary: at most 1.5 GiB by the
    /// format, 8 MiB for xz's default presets). Input that ends inside a stream is an error.
    final class XZ {
        private let descriptor: Int32
        private var stream = lzma_stream()
        private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 17, alignment: 16)
        private var ended = false
        private var finished = false

        init(descriptor: Int32) throws(FormatError) {
            self.descriptor = descriptor
            // The decoder's memory is bounded (256 MiB): a hostile header cannot ask for more.
            let status = lzma_stream_decoder(&stream, 256 << 20, crashsym_lzma_concatenated)
            guard status == LZMA_OK else {
                input.deallocate()
                throw FormatError(.decompression, "xz: cannot create a decoder (\(status.rawValue))")
            }
        }

        deinit {
            lzma_end(&stream)
            input.deallocate()
        }

        /// Fills `buffer` with decompressed bytes; 0 at the end of the last stream.
        func read(into buffer: UnsafeMutableRawBufferPointer) throws(FormatError) -> Int {
            guard !finished else { return 0 }
            stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            stream.avail_out = buffer.count
            while stream.avail_out == buffer.count {
                if stream.avail_in == 0 && !ended {
                    let count = try CoreStreamSource.reader(descriptor)(input)
                    if count == 0 { ended = true } else {
                        stream.next_in = UnsafePointer(input.baseAddress!.assumingMemoryBound(to: UInt8.self))
                        stream.avail_in = count
                    }
                }
                let status = lzma_code(&stream, ended ? LZMA_FINISH : LZMA_RUN)
                if status == LZMA_STREAM_END {
                    finished = true
                    break
                }
                guard status == LZMA_OK else {
                    throw FormatError(.decompression, "xz: the compressed core does not decode (liblzma status \(status.rawValue))")
                }
                if ended && stream.avail_in == 0 && stream.avail_out == buffer.count {
                    throw FormatError(.decompression, "xz: the compressed core ends inside a stream")
                }
            }
            return buffer.count - stream.avail_out
        }
    }
}
