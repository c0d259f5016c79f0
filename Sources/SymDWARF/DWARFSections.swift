import SymBytes
import SymELF

/// The DWARF sections of one ELF file, decompressed, as handed over by SymELF (see `DWARFSections+ELF`).
///
/// Uncompressed sections point into the file's mapping; `owners` keeps mappings and decompressed
/// buffers alive for as long as this value is used.
public struct DWARFSections {
    /// Whether multi-byte values are little-endian.
    public var isLittleEndian: Bool
    /// Whether the ELF class is 64-bit (the default address size when a unit does not say).
    public var is64Bit: Bool
    /// ELF `e_machine`.
    public var machine: UInt16
    /// Section bytes by DWARF name without the leading dot and `debug_` prefix folded in:
    /// keys are the standard names, e.g. `.debug_info`, `.debug_line` (also for `.zdebug_*` input).
    public var sections: [String: UnsafeRawBufferPointer]
    /// Keeps `sections` valid.
    public var owners: [any AnyObject & Sendable]
    /// Names of the sections whose bytes are a read-only view of a file mapping: their pages may
    /// be given back to the kernel once read (`FileMappedPages.release`), and are read again from the file
    /// if needed. Decompressed sections are never listed (dropping their pages would zero them).
    public var fileMapped: Set<String> = []
    /// Sections decompressed as they are read (`SectionStream`), by name: their bytes in
    /// `sections` are the stream's region, resident only where the stream has filled it.
    public var streams: [String: SectionStream] = [:]

    /// The standard DWARF section names symbolication reads.
    public static let wantedNames = [
        ".debug_info", ".debug_abbrev", ".debug_line", ".debug_line_str", ".debug_str",
        ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges",
    ]

    /// Creates an empty set.
    public init(isLittleEndian: Bool, is64Bit: Bool, machine: UInt16) {
        self.isLittleEndian = isLittleEndian
        self.is64Bit = is64Bit
        self.machine = machine
        sections = [:]
        owners = []
    }

    /// The bytes of a section, empty when absent.
    public subscript(_ name: String) -> UnsafeRawBufferPointer {
        sections[name] ?? UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// Releases the pages of every file-mapped section (see `FileMappedPages`).
    func releaseFileMappedPages() {
        for name in fileMapped {
            let bytes = self[name]
            guard let base = bytes.baseAddress else { continue }
            FileMappedPages.release(of: base, count: bytes.count, 0..<bytes.count)
        }
    }

    /// Forgets section `name` and, when nothing else holds it, frees its decompressed buffer (a
    /// file-mapped section's pages are given back instead). Views of the section taken before
    /// must not be read afterwards.
    mutating func drop(_ name: String) {
        guard let bytes = sections.removeValue(forKey: name), let base = bytes.baseAddress else { return }
        if fileMapped.remove(name) != nil {
            FileMappedPages.release(of: base, count: bytes.count, 0..<bytes.count)
        }
        streams.removeValue(forKey: name)
        owners.removeAll {
            ($0 as? SectionContents)?.bytes.baseAddress == base || ($0 as? SectionStream)?.bytes.baseAddress == base
        }
    }

    /// Whether there is any DWARF to read.
    public var hasDebugInfo: Bool { !self[".debug_info"].isEmpty }
}
