import SymBytes
import SymELF
import SymTable

extension DWARFReader {
    /// Walks the DIEs and line tables of a run of units into a `PartialModel`; one per thread.
    ///
    /// The walk is iterative with a bounded stack, reads every DIE at most once, and materialises
    /// attribute values only for subprograms and inlined subroutines. DIEs that cannot hold code
    /// scopes are skipped whole: by `DW_AT_sibling` when present, else by form sizes (a constant
    /// per abbreviation when every form has a fixed size).
    ///
    /// Work that a hostile file could make quadratic (range list entries, strings used, line table
    /// headers and file names per unit) is charged to `budget`; the charges do not depend on what
    /// is cached, so the limit trips the same way however the units are split.
    struct UnitWalker {
        /// Work units charged per range list entry.
        static let rangeEntryCost = 16
        /// Work units charged per file name resolved.
        static let fileNameCost = 64
        /// Deepest DIE nesting walked (the libdwarf extractor's limit).
        static let maximumDepth = 256
        /// Longest chain of `DW_AT_specification`/`DW_AT_abstract_origin` links followed for a name.
        static let maximumNameHops = 8

        let input: Input
        /// The extracted records.
        private(set) var output = PartialModel()
        /// Remaining work; see the type's comment.
        private var budget: Int
        /// Index in `output.texts`, by string reference (a text's length is charged again on
        /// every use).
        private var textIndex: [UInt64: UInt32] = [:]
        /// The paths of `output.texts`, deduplicated (names and paths are interned apart; no
        /// `String` is held per path: libc's 4,700 paths took 0.5 MB as a dictionary of them).
        private var paths = StringInterner()
        /// Path position by (compilation directory, directory, name) string references.
        private var fileIndex: [FileKey: UInt32] = [:]
        /// (linkage name, name) string references by DIE offset.
        private var names: [Int: (linkage: UInt64, name: UInt64)] = [:]
        /// Line tables already decoded by this walker.
        private var decodedTables = Set<Int>()
        /// Ranges of the DIE being read.
        private var scratch: [AddressRange] = []
        /// Rows and sequences of the line table being decoded, before they are coded into the output.
        private var tableRows: [LineRow] = []
        private var tableSequences: [Range<Int>] = []
        /// For each open DIE with children: the scope inlined children belong to, or `Scope.noParent`.
        private var stack: [UInt32]

        /// Identifies a resolved file name.
        private struct FileKey: Hashable {
            var compilationDirectory: UInt64
            var directory: UInt64
            var name: UInt64
        }

        /// Whether line rows are coded (`PartialModel.lines`) or kept as rows (`rows`).
        let codesLines: Bool

        /// Scratch line rows kept for the next table (24 bytes each).
        static let retainedScratchRows = 16384

        /// Bytes of units walked between two releases of the scattered sections' pages.
        static let scatteredReleaseInterval = 4 << 20

        /// Creates a walker allowed `workLimit` units of work.
        init(_ input: Input, workLimit: Int, codesLines: Bool) {
            self.input = input
            self.codesLines = codesLines
            budget = workLimit
            stack = [UInt32](repeating: Scope.noParent, count: Self.maximumDepth + 1)
            scratch.reserveCapacity(16)
        }

        /// Extracts units `range` of `input.units`, in order.
        mutating func extract(units range: Range<Int>, workLimit: Int) throws(FormatError) {
            reserveCapacity(for: range)
            // Units and their line tables are read in section order: the pages behind the walk are
            // given back as it goes (file mappings only), so resident memory holds the output, not
            // the input. A later reference behind the watermark just reads the page in again.
            var infoWatermark = range.isEmpty ? 0 : input.units[range.lowerBound].offset
            var lineWatermark = -1
            var scatteredReleased = infoWatermark
            for index in range {
                let unit = input.units[index]
                guard unit.isExtracted else { continue }
                // Streamed sections (`Input.streamedInfo`, `streamedLine`) are filled to the end of
                // the unit and of its line table before they are read, and given back behind.
                try input.streamedInfo?.fill(upTo: unit.end)
                if let lineStream = input.streamedLine, unit.lineTableOffset >= 0 && unit.lineTableOffset < input.line.count {
                    lineStream.release(below: unit.lineTableOffset)
                    try lineStream.fill(upTo: unit.lineTableOffset + unit.lineTableSize)
                }
                let files = try readLineTable(of: unit)
                try walkDIEs(of: unit, files: files)
                input.streamedInfo?.release(below: unit.end)
                if input.infoIsFileMapped && unit.end > infoWatermark {
                    infoWatermark = FileMappedPages.release(of: input.info.base, count: input.info.count,
                                                               infoWatermark..<unit.end)
                }
                // Every 4 MiB of units, the scattered sections' pages go back (a few are read in again).
                if unit.end - scatteredReleased >= Self.scatteredReleaseInterval {
                    scatteredReleased = unit.end
                    for section in input.scatteredFileMapped {
                        _ = FileMappedPages.release(of: section.base, count: section.count, 0..<section.count)
                    }
                }
                if input.lineIsFileMapped && unit.lineTableOffset >= 0 && unit.lineTableOffset < input.line.count {
                    if lineWatermark < 0 || unit.lineTableOffset < lineWatermark {
                        lineWatermark = unit.lineTableOffset  // first table, or tables out of order: restart
                    } else {
                        // Every table before this unit's has been decoded.
                        lineWatermark = FileMappedPages.release(of: input.line.base, count: input.line.count,
                                                                   lineWatermark..<unit.lineTableOffset)
                    }
                }
            }
            output.work = workLimit - budget
        }

        /// Reserves output space in proportion to the input (the ratios of gcc and clang output,
        /// e.g. python3.11d: a row per 4 bytes of line program, a scope per 400 bytes of DIEs), so
        /// the arrays are not copied while they grow.
        private mutating func reserveCapacity(for range: Range<Int>) {
            var dieBytes = 0
            var lineBytes = 0
            for unit in input.units[range] where unit.isExtracted {
                dieBytes += unit.end - unit.offset
                lineBytes += unit.lineTableSize
            }
            if codesLines {
                // Coded rows take about as many bytes as the line programs they come from.
                output.lines.reserveCapacity(bytes: lineBytes + lineBytes / 4)
            } else {
                output.rows.reserveCapacity(lineBytes / 4)
            }
            output.scopes.reserveCapacity(dieBytes / 256)
            output.ranges.reserveCapacity(dieBytes / 128)
            names.reserveCapacity(dieBytes / 1024)
        }

        /// Takes `cost` units of work from the budget.
        @inline(__always)
        private mutating func charge(_ cost: Int, at offset: Int) throws(FormatError) {
            budget -= cost
            guard budget >= 0 else {
                throw FormatError(.limitExceeded, "the DWARF needs more work than its size allows (hostile input?)",
                                  offset: UInt64(clamping: offset))
            }
        }

        // MARK: Line tables

        /// Decodes the unit's line table (once per offset) and returns the model file, as a text
        /// index, for each value of the file register.
        private mutating func readLineTable(of unit: Unit) throws(FormatError) -> [UInt32] {
            guard unit.lineTableOffset >= 0, input.line.count > 0 else { return [] }
            let offset = unit.lineTableOffset
            var program = try DWARFLineProgram(input, at: offset, unit: unit)
            try charge(program.programOffset - offset, at: offset)
            let decode = decodedTables.insert(offset).inserted
            // Coding rows: decoded into scratch arrays, then coded. Else straight into the output.
            let firstRow = output.rows.count
            let firstSequence = codesLines ? output.lines.sequenceCount : output.sequences.count
            if decode && codesLines {
                tableRows.removeAll(keepingCapacity: true)
                tableSequences.removeAll(keepingCapacity: true)
                try program.run(input.line, into: &tableRows, sequences: &tableSequences)
            } else if decode {
                try program.run(input.line, into: &output.rows, sequences: &output.sequences)
            }
            // File names are resolved once per unit (not per row), in file-register order.
            var files = [UInt32](repeating: 0, count: Int(program.firstFileNumber))
            files.reserveCapacity(files.count + program.files.count)
            for file in program.files {
                files.append(try path(of: file, compilationDirectory: unit.compilationDirectory, at: offset))
            }
            if decode && codesLines {
                for index in tableRows.indices {
                    let register = Int(tableRows[index].file)
                    tableRows[index].file = register < files.count ? files[register] : 0
                }
                for sequence in tableSequences { output.lines.appendSequence(tableRows[sequence]) }
                output.tables.append((offset, firstSequence..<output.lines.sequenceCount))
                // The scratch rows are reused from table to table, but not the room an outsized
                // table made (python3.11d has one of 134,000 rows: 3 MB held to the walk's end,
                // where the output is largest).
                if tableRows.capacity > Self.retainedScratchRows { tableRows = [] }
            } else if decode {
                for index in firstRow..<output.rows.count {
                    let register = Int(output.rows[index].file)
                    output.rows[index].file = register < files.count ? files[register] : 0
                }
                output.tables.append((offset, firstSequence..<output.sequences.count))
            }
            return files
        }

        /// The text index of a file's path, joined as `ModelBuilder.joinPath` does.
        private mutating func path(of file: DWARFLineProgram.File, compilationDirectory: UInt64,
                                   at offset: Int) throws(FormatError) -> UInt32 {
            let compilationDirectory = file.directoryIsCompilationDirectory ? 0 : compilationDirectory
            let key = FileKey(compilationDirectory: compilationDirectory, directory: file.directory, name: file.name)
            if let index = fileIndex[key] {
                try charge(Self.fileNameCost + output.texts.byteCount(of: Int(index)), at: offset)
                return index
            }
            // Read a component only when the join uses it, so decoding costs no more than the path
            // (an absolute name stands alone; an absolute directory needs no compilation directory).
            let name = try component(file.name)
            var path = name
            if !name.hasPrefix("/") {
                let directory = try component(file.directory)
                let base = directory.hasPrefix("/") ? "" : try component(compilationDirectory)
                path = ModelBuilder.joinPath(compilationDirectory: base, directory: directory, name: name,
                                             directoryIsCompilationDirectory: file.directoryIsCompilationDirectory)
            }
            try charge(Self.fileNameCost + path.utf8.count, at: offset)
            let index = try Self.withUTF8(of: path) { (bytes) throws(FormatError) -> UInt32 in
                if let existing = paths.find(bytes, in: output.texts) { return existing }
                let index = try append(bytes, isPath: true, at: offset)
                paths.add(index, in: output.texts)
                return index
            }
            fileIndex[key] = index
            return index
        }

        /// A path component by string reference ("" for 0). Read again for each file it is part
        /// of (a new file only: `fileIndex` holds the paths made), and paid for by the path's charge.
        private func component(_ reference: UInt64) throws(FormatError) -> String {
            if reference == 0 { return "" }
            let (bytes, offset) = input.bytes(of: reference)
            let length = try bytes.stringLength(at: offset, maximum: budget)
            return bytes.string(at: offset, length: length)
        }

        /// Appends a text (valid UTF-8) to the output, returning its index; the empty text is 0.
        private mutating func append(_ text: UnsafeRawBufferPointer, isPath: Bool,
                                     at offset: Int) throws(FormatError) -> UInt32 {
            if text.isEmpty { return 0 }
            guard output.texts.count < Int(UInt32.max) - 1 else {
                throw FormatError(.limitExceeded, "too many strings", offset: UInt64(offset))
            }
            output.isPath.append(isPath)
            return output.texts.append(text)
        }

        /// Appends a text given as a String to the output, returning its index; the empty text is 0.
        private mutating func append(_ text: String, isPath: Bool, at offset: Int) throws(FormatError) -> UInt32 {
            try Self.withUTF8(of: text) { (bytes) throws(FormatError) -> UInt32 in
                try append(bytes, isPath: isPath, at: offset)
            }
        }

        /// Calls `body` with the UTF-8 bytes of `text`, passing its typed error on (`withUTF8`
        /// rethrows untyped errors only: the typed one goes through a Result).
        private static func withUTF8(of text: String,
                                     _ body: (UnsafeRawBufferPointer) throws(FormatError) -> UInt32) throws(FormatError) -> UInt32 {
            var text = text
            return try text.withUTF8 { utf8 in
                Result { () throws(FormatError) -> UInt32 in try body(UnsafeRawBufferPointer(utf8)) }
            }.get()
        }

        /// The text index of a name by string reference (0 for none).
        private mutating func text(_ reference: UInt64, at offset: Int) throws(FormatError) -> UInt32 {
            if reference == 0 { return 0 }
            if let index = textIndex[reference] {
                try charge(output.texts.byteCount(of: Int(index)), at: offset)
                return index
            }
            let (bytes, start) = input.bytes(of: reference)
            let length = try bytes.stringLength(at: start, maximum: budget)
            try charge(length, at: offset)
            let raw = UnsafeRawBufferPointer(start: bytes.base + start, count: length)
            let index: UInt32
            if raw.allSatisfy({ $0 < 0x80 }) {
                // ASCII (nearly every name) is valid UTF-8 as it is: no String is made.
                index = try append(raw, isPath: false, at: offset)
            } else {
                // Ill-formed UTF-8 is repaired as `String(decoding:as:)` does.
                index = try append(bytes.string(at: start, length: length), isPath: false, at: offset)
            }
            textIndex[reference] = index
            return index
        }

        // MARK: DIEs

        /// Walks the children of the unit DIE.
        private mutating func walkDIEs(of unit: Unit, files: [UInt32]) throws(FormatError) {
            guard unit.hasChildren else { return }
            let info = input.info
            let table = input.tables[unit.table]
            let entries = input.abbreviations.entries
            let specs = input.abbreviations.specs
            let largeConstants = input.abbreviations.largeConstants
            let limit = unit.end
            let encoding = unit.encoding
            var offset = unit.childrenOffset
            var depth = 1
            stack[0] = Scope.noParent
            while depth > 0 {
                let dieOffset = offset
                let code = try info.uleb(&offset, limit)
                if code == 0 {
                    depth -= 1
                    continue
                }
                let entryIndex = table.index(of: code)
                guard entryIndex >= 0 else { throw info.invalid(dieOffset, "unknown abbreviation code \(code)") }
                let entry = entries[entryIndex]
                switch entry.action {
                case .skip:
                    if entry.hasChildren {
                        try skipSubtree(entry, table, at: dieOffset, &offset, unit)
                    } else if entry.fixedSize >= 0 {
                        // Reads past `limit` are caught by the next read.
                        offset &+= Int(entry.fixedSize)
                    } else {
                        try skipAttributes(entry, specs, &offset, limit, encoding)
                    }
                case .descend:
                    if entry.fixedSize >= 0 {
                        offset &+= Int(entry.fixedSize)
                    } else {
                        try skipAttributes(entry, specs, &offset, limit, encoding)
                    }
                    if entry.hasChildren { try push(stack[depth - 1], &depth, at: dieOffset) }
                case .subprogram:
                    let attributes = try DIEAttributes(info, entry, specs, largeConstants, &offset, unit)
                    if attributes.declaration {
                        if entry.hasChildren { try skipChildren(table, sibling: attributes.sibling, at: dieOffset, &offset, unit) }
                        continue
                    }
                    var scope = Scope.noParent
                    scratch.removeAll(keepingCapacity: true)
                    try input.appendCodeRanges(of: attributes, unit: unit, to: &scratch, budget: &budget)
                    if !scratch.isEmpty {
                        let name = try nameText(attributes, at: dieOffset, unit)
                        scope = try addScope(name: name, parent: Scope.noParent, attributes, files: files,
                                             at: dieOffset) ?? Scope.noParent
                    }
                    if entry.hasChildren { try push(scope, &depth, at: dieOffset) }
                case .inlinedSubroutine:
                    let parent = stack[depth - 1]
                    let attributes = try DIEAttributes(info, entry, specs, largeConstants, &offset, unit)
                    // An inlined call outside any function with code has nowhere to belong.
                    if parent == Scope.noParent {
                        if entry.hasChildren { try skipChildren(table, sibling: attributes.sibling, at: dieOffset, &offset, unit) }
                        continue
                    }
                    var scope: UInt32?
                    scratch.removeAll(keepingCapacity: true)
                    try input.appendCodeRanges(of: attributes, unit: unit, to: &scratch, budget: &budget)
                    if !scratch.isEmpty {
                        let name = try nameText(attributes, at: dieOffset, unit)
                        scope = try addScope(name: name, parent: parent, attributes, files: files, at: dieOffset)
                    }
                    // Children of an inlined call without code belong to the enclosing scope.
                    if entry.hasChildren { try push(scope ?? parent, &depth, at: dieOffset) }
                }
            }
        }

        /// Opens a DIE's children.
        @inline(__always)
        private mutating func push(_ scope: UInt32, _ depth: inout Int, at offset: Int) throws(FormatError) {
            guard depth < Self.maximumDepth else {
                throw FormatError(.limitExceeded, "DIEs nested deeper than \(Self.maximumDepth)", offset: UInt64(offset))
            }
            stack[depth] = scope
            depth += 1
        }

        /// Skips the attribute values of a DIE.
        @inline(__always)
        private func skipAttributes(_ entry: AbbreviationTable.Entry, _ specs: [AbbreviationTable.Spec],
                                    _ offset: inout Int, _ limit: Int, _ encoding: Encoding) throws(FormatError) {
            let first = Int(entry.firstSpec)
            for index in first..<(first + Int(entry.specCount)) {
                try input.info.skip(form: specs[index].form, &offset, limit, encoding)
            }
        }

        /// Skips a DIE's attributes and all its descendants (`offset` is just past its code).
        private func skipSubtree(_ entry: AbbreviationTable.Entry, _ table: AbbreviationTable, at dieOffset: Int,
                                 _ offset: inout Int, _ unit: Unit) throws(FormatError) {
            if entry.hasSibling {
                let attributes = try DIEAttributes(input.info, entry, input.abbreviations, &offset, unit)
                try skipChildren(table, sibling: attributes.sibling, at: dieOffset, &offset, unit)
            } else {
                try skipAttributes(entry, input.abbreviations.specs, &offset, unit.end, unit.encoding)
                try skipChildren(table, sibling: -1, at: dieOffset, &offset, unit)
            }
        }

        /// Skips the children of a DIE whose attributes have been read: jumps to `sibling` when it
        /// points forward within the unit, else walks the children by form sizes.
        private func skipChildren(_ table: AbbreviationTable, sibling: Int, at dieOffset: Int,
                                  _ offset: inout Int, _ unit: Unit) throws(FormatError) {
            if sibling >= offset && sibling <= unit.end {
                offset = sibling
                return
            }
            let info = input.info
            let limit = unit.end
            let encoding = unit.encoding
            var level = 1
            while level > 0 {
                let childOffset = offset
                let code = try info.uleb(&offset, limit)
                if code == 0 {
                    level -= 1
                    continue
                }
                let entryIndex = table.index(of: code)
                guard entryIndex >= 0 else { throw info.invalid(childOffset, "unknown abbreviation code \(code)") }
                let entry = input.abbreviations.entries[entryIndex]
                if entry.fixedSize >= 0 {
                    offset &+= Int(entry.fixedSize)
                } else {
                    try skipAttributes(entry, input.abbreviations.specs, &offset, limit, encoding)
                }
                if entry.hasChildren { level += 1 }
            }
        }

        /// Appends a scope with the ranges in `scratch` that do not start at 0 (code removed by the
        /// linker, as `ModelBuilder.addScope` drops them); nil when none is left.
        private mutating func addScope(name: UInt32, parent: UInt32, _ attributes: DIEAttributes, files: [UInt32],
                                       at offset: Int) throws(FormatError) -> UInt32? {
            guard output.scopes.count < Int(UInt32.max) - 1, output.ranges.count < Int(UInt32.max) - scratch.count else {
                throw FormatError(.limitExceeded, "too many scopes", offset: UInt64(offset))
            }
            let first = output.ranges.count
            for range in scratch where range.start != 0 {
                output.ranges.append(range)
            }
            let count = output.ranges.count - first
            guard count > 0 else { return nil }
            var callFile: UInt32 = 0
            if parent != Scope.noParent && attributes.hasCallFile && attributes.callFile < UInt64(files.count) {
                callFile = files[Int(attributes.callFile)]
            }
            let isInlined = parent != Scope.noParent
            output.scopes.append(Scope(name: name, parent: parent, firstRange: UInt32(first), rangeCount: UInt32(count),
                                       callFile: callFile,
                                       callLine: isInlined ? UInt32(truncatingIfNeeded: attributes.callLine) : 0,
                                       callColumn: isInlined ? UInt32(truncatingIfNeeded: attributes.callColumn) : 0))
            return UInt32(output.scopes.count - 1)
        }

        // MARK: Names

        /// The text of a scope's name: its linkage name, else its name, each found on the DIE or
        /// through `DW_AT_specification`/`DW_AT_abstract_origin` (see `ModelBuilder`).
        private mutating func nameText(_ attributes: DIEAttributes, at offset: Int, _ unit: Unit) throws(FormatError) -> UInt32 {
            let found = try names(attributes, unit, hops: 0)
            return try text(found.linkage != 0 ? found.linkage : found.name, at: offset)
        }

        /// (linkage name, name) string references of a DIE, following its links depth-first
        /// (specification before abstract origin, as the libdwarf extractor does).
        private mutating func names(_ attributes: DIEAttributes, _ unit: Unit,
                                    hops: Int) throws(FormatError) -> (linkage: UInt64, name: UInt64) {
            var linkage: UInt64 = 0
            if attributes.linkageNameForm != 0 {
                linkage = try input.stringReference(form: attributes.linkageNameForm, value: attributes.linkageName, unit: unit)
            }
            if linkage == 0 && attributes.mipsLinkageNameForm != 0 {
                linkage = try input.stringReference(form: attributes.mipsLinkageNameForm,
                                                    value: attributes.mipsLinkageName, unit: unit)
            }
            var name: UInt64 = 0
            if attributes.nameForm != 0 {
                name = try input.stringReference(form: attributes.nameForm, value: attributes.name, unit: unit)
            }
            if (linkage == 0 || name == 0) && hops < Self.maximumNameHops {
                if attributes.specification >= 0 {
                    let inherited = try names(ofDIEAt: attributes.specification, from: unit, hops: hops + 1)
                    if linkage == 0 { linkage = inherited.linkage }
                    if name == 0 { name = inherited.name }
                }
                if (linkage == 0 || name == 0) && attributes.abstractOrigin >= 0 {
                    let inherited = try names(ofDIEAt: attributes.abstractOrigin, from: unit, hops: hops + 1)
                    if linkage == 0 { linkage = inherited.linkage }
                    if name == 0 { name = inherited.name }
                }
            }
            return (linkage, name)
        }

        /// `names` of the DIE at a `.debug_info` offset, which may lie in another unit, cached by
        /// offset (abstract origins are referenced many times); a reference to no DIE names nothing.
        private mutating func names(ofDIEAt offset: Int, from unit: Unit,
                                    hops: Int) throws(FormatError) -> (linkage: UInt64, name: UInt64) {
            // Not charged to the budget: what is cached differs between threads, and a name costs at
            // most 2^9 DIE reads whatever the input (two links per DIE, `maximumNameHops` deep).
            if let cached = names[offset] { return cached }
            let target: Unit
            if unit.contains(die: offset) {
                target = unit
            } else if input.streamedInfo == nil, let index = input.unitIndex(containing: offset) {
                // (Streamed, the walk reads no other unit's DIEs: `Input.unitsReferToOtherUnits` is
                // false, and a unit-relative reference leading outside its unit, which only broken
                // DWARF has, names nothing.)
                target = input.units[index]
            } else {
                return (0, 0)
            }
            let table = input.tables[target.table]
            var cursor = offset
            let code = try input.info.uleb(&cursor, target.end)
            let entryIndex = table.index(of: code)
            guard code != 0, entryIndex >= 0 else { return (0, 0) }
            let attributes = try DIEAttributes(input.info, input.abbreviations.entries[entryIndex], input.abbreviations,
                                               &cursor, target)
            let found = try names(attributes, target, hops: hops)
            names[offset] = found
            return found
        }
    }
}
