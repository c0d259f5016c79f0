/// A sound upper bound, from one pass over a Swift mangled name, on the length of what the Swift
/// runtime prints for it (and so on the printer's work), without parsing it.
///
/// The runtime's demangler (swift/lib/Demangling/Demangler.cpp) builds a node tree with a stack;
/// the printer prints each node where it sits in the tree. Only three things make the text grow
/// faster than the name:
/// - a substitution (`A` then `[<count>] <letter>`…, or `A<index>_`) pushes a node made earlier
///   once more (`<count>` times, at most 2,048), and the printer prints it in full each time:
///   nested, they double the text at every level (`pushMultiSubstitutions`);
/// - a standard substitution with a count (`S<count><letter>`, `Swift.Int` 2,048 times);
/// - a word substitution in an identifier (`0` then letters) copies a word of an earlier
///   identifier: quadratic in the name's length (`demangleIdentifier`).
/// Everything else prints at most a fixed text per byte of name (`fixedTextPerByte`: the longest
/// is `Tf`'s `Arg[n] = Owned To Guaranteed, ` and `WI`'s `instantiation function for generic
/// protocol witness table for `, about 32 bytes a byte).
///
/// The bound does not know where the parser's operators start (that needs the parse), so it
/// assumes the worst of every byte that could start a growing operator: every `A` starts a
/// substitution run and every `0` an identifier with word substitutions, read the way the
/// runtime would read them from there. The runtime's real operators are among those, and each
/// one read from a byte is read the same way, so each step the runtime takes is matched by a step
/// here at least as large, in the same order: a substitution's node was printed within the text so
/// far, so `total += count * total` covers it. Sound, and loose: a real name's substitutions refer
/// to small nodes, while the bound lets each one double everything before it, and the `A` of an
/// identifier such as `Attributes` counts as a run of substitutions (on 534,544 names of the
/// toolchain's libraries and swift-package, the median bound is 28 KiB for a median of 128 bytes
/// printed, and one in ten is over 51 MB). What it rests on, read from the runtime's source: the
/// demangler reuses a node only through these operators, and the printer prints each node once
/// for each place it has in the tree; the tests check it on every real name and on mutated ones.
enum SwiftOutputBound {
    /// Bytes of text one byte of mangling may print besides substitutions, with a margin of two
    /// over the longest the printer writes.
    static let fixedTextPerByte: UInt64 = 64
    /// The longest text one standard substitution (`Si`, `ScT`, …) prints (`Swift.UnsafeMutableRawBufferPointer`
    /// is 35), with a margin.
    static let standardTypeText: UInt64 = 64
    /// The largest repeat count the runtime accepts (`SubstitutionMerging::MaxRepeatCount`).
    static let maximumRepeatCount: UInt64 = 2048
    /// Where the bound stops counting (it is then only compared with smaller limits).
    static let saturation: UInt64 = 1 << 60

    /// Per byte of the name, what an operator starting earlier may make of it.
    private struct Mark {
        static let wordReference: UInt8 = 1
        static let identifierVisited: UInt8 = 2
    }

    /// The bound on the printed length of `name` (with its prefix), saturating at `saturation`.
    static func bound(_ name: UnsafeRawBufferPointer) -> UInt64 {
        let count = name.count
        guard count > 0 else { return 0 }
        return withUnsafeTemporaryAllocation(of: UInt16.self, capacity: count) { multipliers in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { marks in
                multipliers.initialize(repeating: 0)
                marks.initialize(repeating: 0)
                return bound(name, multipliers: multipliers, marks: marks)
            }
        }
    }

    /// `bound(_:)` with scratch space of one entry per byte of `name`: `multipliers` (the largest
    /// repeat count of a substitution that may take effect at that byte) and `marks` (`Mark`).
    private static func bound(_ name: UnsafeRawBufferPointer, multipliers: UnsafeMutableBufferPointer<UInt16>,
                              marks: UnsafeMutableBufferPointer<UInt8>) -> UInt64 {
        let count = name.count
        let longestWord = UInt64(longestPossibleWord(name))
        var total: UInt64 = 0
        for index in 0..<count {
            let byte = name[index]
            // Operators that start here mark the bytes they would read (always later ones).
            if byte == UInt8(ascii: "A") {
                markSubstitutions(name, after: index, multipliers: multipliers)
            } else if byte == UInt8(ascii: "0"), index + 1 < count, name[index + 1] != UInt8(ascii: "0") {
                markWordReferences(name, after: index, marks: marks)
            }
            total = add(total, fixedTextPerByte)
            if byte == UInt8(ascii: "S"), let repeats = number(in: name, at: index + 1)?.value, repeats > 1 {
                total = add(total, UInt64(repeats) * standardTypeText)
            }
            if marks[index] & Mark.wordReference != 0 { total = add(total, longestWord) }
            let multiplier = UInt64(multipliers[index])
            if multiplier > 0 {
                total = total >= saturation / (multiplier + 1) ? saturation : total * (multiplier + 1)
            }
        }
        return total
    }

    /// Marks the substitutions of a run `A [<count>] <letter>… <LETTER>` (or `A <index> _`) read
    /// from `index + 1`, as `Demangler::demangleMultiSubstitutions` reads it.
    private static func markSubstitutions(_ name: UnsafeRawBufferPointer, after index: Int,
                                          multipliers: UnsafeMutableBufferPointer<UInt16>) {
        var position = index + 1
        var repeats = 1
        while position < name.count {
            let byte = name[position]
            if isLowercase(byte) || isUppercase(byte) || byte == UInt8(ascii: "_") {
                // `<index>_` pushes one node; a letter pushes its node `repeats` times.
                let times = byte == UInt8(ascii: "_") ? 1 : repeats
                multipliers[position] = max(multipliers[position], UInt16(times))
                guard isLowercase(byte) else { return }
                repeats = 1
                position += 1
            } else if let (value, end) = number(in: name, at: position) {
                guard value <= maximumRepeatCount else { return }  // the runtime refuses the name
                repeats = max(1, Int(value))
                position = end
            } else {
                return
            }
        }
    }

    /// Marks the word substitutions of an identifier `0 <letter>… <chunk>…` read from `index + 1`,
    /// as `Demangler::demangleIdentifier` reads it: letters name words, digits a literal chunk,
    /// until an upper-case letter (the last word) or a `0`. Bytes already read this way from an
    /// earlier `0` are not read again (the reading from there is the same): linear overall.
    private static func markWordReferences(_ name: UnsafeRawBufferPointer, after index: Int,
                                           marks: UnsafeMutableBufferPointer<UInt8>) {
        var position = index + 1
        var moreWords = true
        while position < name.count {
            if marks[position] & Mark.identifierVisited != 0 { return }
            marks[position] |= Mark.identifierVisited
            while moreWords && position < name.count && (isLowercase(name[position]) || isUppercase(name[position])) {
                marks[position] |= Mark.wordReference
                if isUppercase(name[position]) { moreWords = false }
                position += 1
            }
            guard position < name.count, name[position] != UInt8(ascii: "0"),
                  let (length, end) = number(in: name, at: position), length > 0,
                  length <= UInt64(name.count - end) else { return }
            position = end + Int(length)
            guard moreWords else { return }
        }
    }

    /// The longest text a word substitution can copy: words are pieces of earlier literal chunks
    /// (pieces of this name) that hold no `_` and no upper-case letter after a non-upper-case one
    /// (`isWordEnd` in the runtime's ManglingUtils.h), so no longer than the longest such run.
    private static func longestPossibleWord(_ name: UnsafeRawBufferPointer) -> Int {
        var longest = 0, start = 0
        for index in 0..<name.count {
            let byte = name[index]
            if byte == UInt8(ascii: "_") {
                start = index + 1
            } else if index > start && isUppercase(byte) && !isUppercase(name[index - 1]) {
                start = index
            }
            longest = max(longest, index + 1 - start)
        }
        return longest
    }

    /// The decimal number starting at `position` (saturating above the repeat limit) and where it
    /// ends, or nil when no digit is there.
    private static func number(in name: UnsafeRawBufferPointer, at position: Int) -> (value: UInt64, end: Int)? {
        var end = position
        var value: UInt64 = 0
        while end < name.count, name[end] >= UInt8(ascii: "0"), name[end] <= UInt8(ascii: "9") {
            value = min(value * 10 + UInt64(name[end] - UInt8(ascii: "0")), UInt64(UInt32.max))
            end += 1
        }
        return end == position ? nil : (value, end)
    }

    /// `a + b`, saturating at `saturation`.
    @inline(__always)
    private static func add(_ a: UInt64, _ b: UInt64) -> UInt64 {
        min(saturation, a + min(b, saturation))
    }

    @inline(__always)
    private static func isLowercase(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }

    @inline(__always)
    private static func isUppercase(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
}
