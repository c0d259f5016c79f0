extension DWARFReader {
    /// The distinct abbreviations of all of a file's abbreviation tables, each stored once.
    ///
    /// gcc writes a table per unit that repeats the same few thousand abbreviations: libc's debug
    /// file has 58,828 abbreviations with 275,004 attribute specifications in its 1,507 distinct
    /// tables, but only some 2,100 distinct abbreviations. Stored per table they took 3.4 MB for
    /// the whole walk; stored once, a table is just its code map (`AbbreviationTable`).
    struct Abbreviations {
        /// The abbreviations; `AbbreviationTable` maps codes to indices here.
        private(set) var entries: [AbbreviationTable.Entry] = []
        /// Attribute specifications of all entries (`Entry.firstSpec`, `Entry.specCount`).
        private(set) var specs: [AbbreviationTable.Spec] = []
        /// The implicit constants that do not fit in `Spec.constant` (rare: GCC's are small).
        private(set) var largeConstants: [Int64] = []
        /// Indices in `entries` of the abbreviations with a hash of their contents.
        private var byHash: [Int: [Int32]] = [:]

        /// The index in `entries` of an abbreviation equal to `entry` with `specs` (its
        /// `firstSpec` is ignored), stored now if there is none yet.
        mutating func intern(_ entry: AbbreviationTable.Entry, specs entrySpecs: [AbbreviationTable.Spec]) -> Int32 {
            var hasher = Hasher()
            var key = entry
            key.firstSpec = 0
            hasher.combine(key)
            for spec in entrySpecs { combine(spec, into: &hasher) }
            let hash = hasher.finalize()
            for index in byHash[hash, default: []] where isEqual(entries[Int(index)], to: key, specs: entrySpecs) {
                return index
            }
            key.firstSpec = Int32(specs.count)
            specs.append(contentsOf: entrySpecs)
            entries.append(key)
            let index = Int32(entries.count - 1)
            byHash[hash, default: []].append(index)
            return index
        }

        /// A specification whose implicit constant is kept in `largeConstants`.
        mutating func largeConstantSpec(form: UInt16, role: AbbreviationTable.Role, value: Int64) -> AbbreviationTable.Spec {
            largeConstants.append(value)
            return AbbreviationTable.Spec(form: form, role: role, isLargeConstant: true, constant: Int32(largeConstants.count - 1))
        }

        /// Gives back the room the arrays grew into and the lookup by hash, once every table is decoded.
        mutating func finish() {
            byHash = [:]
            entries = Self.exactCopy(entries)
            specs = Self.exactCopy(specs)
        }

        /// Hashes a specification by its value: large constants by the constant, not its index.
        private func combine(_ spec: AbbreviationTable.Spec, into hasher: inout Hasher) {
            hasher.combine(spec.form)
            hasher.combine(spec.role)
            hasher.combine(spec.implicitConst(largeConstants))
        }

        /// Whether stored `entry` has the same contents as `key` with `keySpecs`.
        private func isEqual(_ entry: AbbreviationTable.Entry, to key: AbbreviationTable.Entry,
                             specs keySpecs: [AbbreviationTable.Spec]) -> Bool {
            var stored = entry
            stored.firstSpec = 0
            guard stored == key else { return false }
            for (offset, spec) in keySpecs.enumerated() {
                let other = specs[Int(entry.firstSpec) + offset]
                guard other.form == spec.form, other.role == spec.role,
                      other.implicitConst(largeConstants) == spec.implicitConst(largeConstants) else { return false }
            }
            return true
        }

        /// A copy of `array` in storage of its own size.
        private static func exactCopy<Element>(_ array: [Element]) -> [Element] {
            guard array.capacity > array.count else { return array }
            return [Element](unsafeUninitializedCapacity: array.count) { buffer, count in
                count = buffer.initialize(fromContentsOf: array)
            }
        }
    }
}
