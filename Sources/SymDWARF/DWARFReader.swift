#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes
import SymELF
import SymTable

/// Extracts functions, inlined subroutines and line tables from DWARF 2–5 with our own decoder:
/// zero-copy over the section bytes, no allocation per DIE, several threads when asked.
///
/// It fills the model by `ModelBuilder`'s conventions, as `LibdwarfExtractor` does, except that a
/// line table referenced by several units (dwz partial units share them) is appended once. Type
/// units and split-DWARF skeletons are skipped, never followed; values kept in other files (dwz's
/// alternate file, type units by signature) are treated as absent.
public enum DWARFReader {
    /// Extracts functions, inlined subroutines and line tables from all units into `builder`.
    /// `threads` > 1 may split units across threads (each thread builds a partial result that is merged
    /// deterministically in unit order, so output is identical whatever the thread count).
    ///
    /// Throws on malformed DWARF and when a hostile file would need far more work than its size
    /// warrants; `builder` is left unchanged then.
    ///
    /// The sections are consumed: given the caller's last copy, decompressed sections are freed
    /// (and mapped ones' pages given back) as soon as the walk is done, before the model grows.
    ///
    /// Inputs under `minimumSplitBytes` of units and line programs are walked on one thread: below
    /// that a second thread saves little time (python3.11d: none) and adds its own output and pages
    /// to the peak memory.
    public static func extract(_ sections: consuming DWARFSections, into builder: inout ModelBuilder,
                               threads: Int = 1, minimumSplitBytes: Int = defaultMinimumSplitBytes) throws(FormatError) {
        guard sections.hasDebugInfo else { return }
        let workLimit = workLimit(for: sections)
        // The walk's input (unit list, abbreviation tables) is freed before the parts are merged.
        let (parts, work) = try walk(&sections, threads: threads, minimumSplitBytes: minimumSplitBytes,
                                     workLimit: workLimit, codesLines: builder.codesLines)
        // Each thread stops at the limit on its own; together they must stay within it too.
        guard work <= workLimit else {
            throw FormatError(.limitExceeded, "the DWARF needs more work than its size allows (hostile input?)")
        }
        // The sections are not read again: their pages need not stay resident while the model grows.
        sections.releaseFileMappedPages()
        sections = DWARFSections(isLittleEndian: sections.isLittleEndian, is64Bit: sections.is64Bit,
                                 machine: sections.machine)
        PartialModel.merge(consume parts, into: &builder)
    }

    /// Walks the units of `sections` on up to `threads` threads into parts in unit order, with the
    /// work they took.
    private static func walk(_ sections: inout DWARFSections, threads: Int, minimumSplitBytes: Int,
                             workLimit: Int, codesLines: Bool) throws(FormatError) -> ([PartialModel], Int) {
        // Streamed sections are decompressed twice (by the scan, then by the walk), the second
        // time on a core the walk leaves free: only when there is one (a file converted beside
        // others gets one thread) and one walker takes all units (`plan` splits them only when
        // there are enough).
        let oneWalker = sections[".debug_info"].count + sections[".debug_line"].count < minimumSplitBytes
        var input = try Input(copy sections, streaming: threads > 1 && oneWalker, spareCore: threads > 1)
        // The abbreviations are decoded into the input's tables and `.debug_aranges` is not read:
        // decompressed, they need not stay allocated through the walk (libc's: 1 MB).
        sections.drop(".debug_abbrev")
        sections.drop(".debug_aranges")
        // Reading the unit headers faulted in pages all over the sections (and their neighbours,
        // by fault-around): give them back; the walkers read them again in order and release them
        // behind themselves.
        sections.releaseFileMappedPages()
        let chunks = plan(input, threads: threads, minimumSplitBytes: minimumSplitBytes)
        // Streamed sections are decompressed again for the one walker, as it goes, on the other
        // core; or whole, should the units be split after all (units sharing line tables can
        // weigh more than the sections' size the choice to stream went by).
        if chunks.count > 1 {
            try input.decompressStreamsWhole()
        }
        let streams = input.streams
        for stream in streams { try stream.restart(lead: streamLead) }
        let jobs = chunks.map { ExtractionJob(input: input, units: $0, workLimit: workLimit, codesLines: codesLines) }
        // The first job runs on this thread, the others on threads of their own.
        ConcurrentWork.run(jobs.map { job in { job.run() } })
        for stream in streams { stream.stopReadingAhead() }
        var parts: [PartialModel] = []
        parts.reserveCapacity(jobs.count)
        var work = 0
        for job in jobs {
            switch job.takeResult() {
            case .success(let part):
                parts.append(part)
                work += part.work
            case .failure(let error):
                throw error
            case nil:
                throw FormatError(.io, "a DWARF extraction thread did not run")
            }
        }
        return (parts, work)
    }

    /// The compressed sections the reader can take as streams (`DWARFSections(elf:streaming:)`),
    /// decompressed as they are read instead of whole beforehand.
    public static let streamableSections: Set<String> = [".debug_info", ".debug_line"]

    /// Bytes of a streamed section kept decompressed ahead of the walk: the decompressor is the
    /// faster of the two, so a little suffices (libc: no slower than decompressing whole).
    static let streamLead = 256 << 10

    /// Unit and line program bytes below which `extract` uses one thread.
    public static let defaultMinimumSplitBytes = 24 << 20

    /// Work allowed for a file: proportional to its DWARF. Real compilers' output needs far less
    /// (python3.11d: 1.6 M units for 16 MB of DWARF); the limit also bounds the memory that range
    /// lists and names can take to a few times the input.
    static func workLimit(for sections: DWARFSections) -> Int {
        let size = DWARFSections.wantedNames.reduce(0) { $0 + sections[$1].count }
        return 16 << 20 + 4 * size
    }

    /// Splits the extracted units into at most `threads` contiguous runs of similar size (unit bytes
    /// plus line table bytes). Small inputs are not split: a thread costs more than it saves.
    static func plan(_ input: Input, threads: Int, minimumSplitBytes: Int = defaultMinimumSplitBytes) -> [Range<Int>] {
        let units = input.units
        func weight(_ unit: Unit) -> Int {
            guard unit.isExtracted else { return 0 }
            return unit.end - unit.offset + unit.lineTableSize
        }
        let weights = units.map(weight)
        let total = weights.reduce(0, +)
        let count = min(max(1, threads), 64, units.count)
        guard count > 1, total >= max(1, minimumSplitBytes) else { return [0..<units.count] }
        var chunks: [Range<Int>] = []
        var start = 0
        var sum = 0
        for (index, unitWeight) in weights.enumerated() {
            sum += unitWeight
            // Close a chunk once it reaches its share of the total.
            if chunks.count < count - 1 && sum * count >= total * (chunks.count + 1) {
                chunks.append(start..<(index + 1))
                start = index + 1
            }
        }
        chunks.append(start..<units.count)
        return chunks.filter { !$0.isEmpty }
    }
}
