#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes

/// An ELF string table (`SHT_STRTAB`): NUL-terminated strings addressed by byte offset.
struct StringTable {
    /// The table's bytes.
    let bytes: UnsafeRawBufferPointer
    /// File offset of the table, for error messages.
    let fileOffset: UInt64

    /// The string at `offset`; throws unless it starts inside the table and ends with a NUL there.
    func string(at offset: UInt32, _ what: @autoclosure () -> String) throws(FormatError) -> String {
        let start = Int(offset)
        guard start < bytes.count, let base = bytes.baseAddress else {
            throw FormatError(.invalidValue,
                              "\(what()) offset \(offset) is outside its string table (\(bytes.count) bytes)",
                              offset: fileOffset)
        }
        guard let terminator = memchr(base + start, 0, bytes.count - start) else {
            throw FormatError(.truncated, "\(what()) is not NUL-terminated",
                              offset: fileOffset &+ UInt64(start))
        }
        let length = UnsafeRawPointer(terminator) - (base + start)
        return String(decoding: UnsafeRawBufferPointer(start: base + start, count: length), as: UTF8.self)
    }
}
