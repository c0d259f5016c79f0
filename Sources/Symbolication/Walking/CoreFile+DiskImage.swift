import SymBytes
import SymCore
import SymELF
import SymReport

extension CoreFile {
    /// What the file on disk is, offered as the image the core mapped at `mappedPath`.
    enum DiskImage {
        /// The file agrees with everything the core says of that path's mappings.
        case verified(ELFFile)
        /// The file contradicts the core (the refusal says how): it is not used.
        case refused(ModuleRefusal)
        /// No ELF file there (absent, unreadable, or another kind of file): nothing to verify.
        case none
    }

    /// The ELF file at `path` as the image mapped at `mappedPath` (the same path, or the one
    /// `--executable` names), verified against the core by `diskImageMismatch`.
    func diskImage(at path: String, mappedAt mappedPath: String) -> DiskImage {
        guard let mapped = try? MappedFile(path: path) else { return .none }
        return withExtendedLifetime(mapped) {
            let bytes = mapped.bytes
            // A data file mapped from its start (a locale archive, a font) is no image.
            guard ELF.hasMagic(bytes) else { return .none }
            let prefix = path == mappedPath ? "file on disk" : "file on disk (\(path))"
            let file: ELFFile
            do {
                file = try ELFFile(file: mapped)
            } catch {
                return .refused(ModuleRefusal(.unreadableImage, "\(prefix) does not match the core's mappings: it is not a readable ELF file (\(error))", path: path))
            }
            if let mismatch = diskImageMismatch(mappedAt: mappedPath, file: file, bytes: bytes) {
                return .refused(ModuleRefusal(.mappingMismatch, "\(prefix) does not match the core's mappings: \(mismatch)", path: path))
            }
            return .verified(file)
        }
    }

    /// How `file` (whose bytes are `bytes`) contradicts what the core says of the image mapped at
    /// `path`; nil when it agrees. Checked: every `NT_FILE` mapping of the path (start, end, file
    /// offset) lies in the file pages of one `PT_LOAD` segment, at that segment's place, with one
    /// load bias for all of them (or in the reservation of the first segment, which the loader
    /// leaves mapped where no segment is); the file holds every byte of its segments that the
    /// mappings cover; every page the core holds of a read-only segment (text, rodata) equals the
    /// file's bytes there. Written pages (data, relocated RELRO) cannot be compared, nor can
    /// pages the core does not hold.
    func diskImageMismatch(mappedAt path: String, file: ELFFile, bytes image: UnsafeRawBufferPointer) -> String? {
        let entries = mappedFiles.filter { $0.path == path }.sorted { $0.start < $1.start }
        guard let first = entries.first else { return nil }
        let loads = file.programHeaders.filter { $0.type == ELF.PT_LOAD }
        guard !loads.isEmpty else { return "it has no PT_LOAD segment" }
        guard loads.count <= 1024 else { return "it declares \(loads.count) PT_LOAD segments" }
        // The page size of the process (AT_PAGESZ), else 4 KiB.
        let page: UInt64 = auxiliaryValue(6).flatMap { $0 >= 4096 && $0 <= 1 << 20 && $0 & ($0 - 1) == 0 ? $0 : nil } ?? 4096
        let mask = ~(page - 1)
        struct Load {
            var segment: ProgramHeader
            /// The file's pages the segment's mapping covers, and the address of the first (unbiased).
            var pages: Range<UInt64>
            var address: UInt64
            /// Its memory's page span (unbiased).
            var memory: Range<UInt64>
        }
        var placed: [Load] = []
        for segment in loads {
            let (fileEnd, o1) = segment.offset.addingReportingOverflow(segment.fileSize)
            let (memoryEnd, o2) = segment.virtualAddress.addingReportingOverflow(segment.memorySize)
            guard !o1, !o2, fileEnd <= UInt64.max - page, memoryEnd <= UInt64.max - page else {
                return "a PT_LOAD segment's range overflows"
            }
            placed.append(Load(segment: segment, pages: (segment.offset & mask)..<((fileEnd + page - 1) & mask),
                               address: segment.virtualAddress & mask,
                               memory: (segment.virtualAddress & mask)..<((memoryEnd + page - 1) & mask)))
        }
        let reservation = placed[0]
        let imageEnd = placed.map(\.memory.upperBound).max() ?? 0
        /// The segment holding `entry` at load bias `bias`, or the first's reservation (nil there).
        func place(_ entry: MappedRange, bias: UInt64) -> Load?? {
            let length = entry.end - entry.start
            for load in placed where entry.fileOffset >= load.pages.lowerBound && entry.fileOffset <= load.pages.upperBound
                && length <= load.pages.upperBound - entry.fileOffset
                && entry.start == bias &+ load.address &+ (entry.fileOffset - load.pages.lowerBound) {
                return .some(load)
            }
            // A gap between segments, mapped as part of the first one's reservation.
            if entry.fileOffset >= reservation.pages.lowerBound,
               entry.start == bias &+ reservation.address &+ (entry.fileOffset - reservation.pages.lowerBound) {
                let low = entry.start &- bias, high = low &+ length
                if low >= reservation.address, high >= low, high <= imageEnd,
                   !placed.contains(where: { $0.memory.overlaps(low..<high) }) {
                    return .some(nil)
                }
            }
            return nil
        }
        // The bias: from the lowest mapping, in a segment that holds its offset.
        let biases = placed.filter { first.fileOffset >= $0.pages.lowerBound && first.fileOffset < $0.pages.upperBound }
            .map { first.start &- $0.address &- (first.fileOffset - $0.pages.lowerBound) }
        var bestMisfit: MappedRange? = first
        var bestCount = -1
        var matched: [(entry: MappedRange, load: Load)] = []
        for bias in biases.prefix(4) {
            var fits: [(MappedRange, Load)] = []
            var misfit: MappedRange?
            var count = 0
            for entry in entries {
                switch place(entry, bias: bias) {
                case .some(.some(let load)): fits.append((entry, load)); count += 1
                case .some(.none): count += 1
                case .none: if misfit == nil { misfit = entry }
                }
            }
            if misfit == nil { bestMisfit = nil; matched = fits; break }
            if count > bestCount { bestCount = count; bestMisfit = misfit }
        }
        if let misfit = bestMisfit {
            return "the mapping \(hex(misfit.start))-\(hex(misfit.end)) of file offset \(hex(misfit.fileOffset)) is in no PT_LOAD segment of the file at one load bias with the others"
        }
        // The file holds the bytes the mappings cover.
        for (entry, load) in matched {
            let segmentEnd = load.segment.offset + load.segment.fileSize
            let needed = min(entry.fileOffset + (entry.end - entry.start), segmentEnd)
            if needed > UInt64(image.count) {
                return "the file is \(image.count) bytes, the mapping at \(hex(entry.start)) needs its bytes up to offset \(hex(needed))"
            }
        }
        // The pages the core holds of read-only segments are the file's.
        for (entry, load) in matched where load.segment.flags & 2 == 0 {
            let low = max(entry.fileOffset, load.segment.offset)
            let high = min(entry.fileOffset + (entry.end - entry.start), load.segment.offset + load.segment.fileSize)
            var offset = low
            while offset < high {
                let count = Int(min((offset & mask) + page, high) - offset)
                let address = entry.start + (offset - entry.fileOffset)
                if let memory = bytes(at: address, count: count) {
                    let same = memory.withUnsafeBytes { memory in
                        memory.elementsEqual(UnsafeRawBufferPointer(rebasing: image[Int(offset)..<(Int(offset) + count)]))
                    }
                    if !same {
                        return "the core's bytes at \(hex(address)) (file offset \(hex(offset)), a read-only segment) differ from the file's"
                    }
                }
                offset += UInt64(count)
            }
        }
        return nil
    }
}

private func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
