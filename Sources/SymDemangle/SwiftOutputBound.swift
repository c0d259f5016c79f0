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
/// Where the runtime's operators start is known from the start of a `$s` name for as long as each
/// operator's own bytes are known (`exactPrefix`: identifiers, with their word substitutions, so
/// that the `A` of `Attributes` is no substitution; substitution runs; standard substitutions;
/// generic parameters; the operators that read no byte of their own; …). From the first operator
/// it does not know to the byte, the bound assumes the worst of every byte that could start a
/// growing operator: every `A` starts a substitution run and every `0` an identifier with word
/// substitutions, read the way the runtime would read them from there. The runtime's real
/// operators are among those, and each one read from a byte is read the same way, so each step
/// the runtime takes is matched by a step here at least as large, in the same order: a
/// substitution's node was printed within the text so far, so `total += count * total` covers it.
/// Sound, and still loose where it assumes (a real name's substitutions refer to small nodes,
/// while the bound lets each one double everything before it): on 533,734 names of the
/// toolchain's libraries and swift-package, 1.7 % are bounded above 1 MiB (22.7 % without the
/// exact prefix), none prints more than 3,991 bytes, and none more than its bound. What it rests
/// on, read from the runtime's source: the demangler reuses a node only through these operators,
/// and the printer prints each node once for each place it has in the tree; the tests check it
/// on real names and on mutated ones.
enum SwiftOutputBound {
    /// Bytes of text one byte of mangling may print besides substitutions, with a margin of two
    /// over the longest the printer writes.
    static let fixedTextPerByte: UInt64 = 64
    /// The longest text one standard substitution (`Si`, `ScT`, …) prints (`Swift.UnsafeMutableRawBufferPointer`
    /// is 35), with a margin.
    static let standardTypeText: UInt64 = 64
    /// The most generic parameters the printer names for one count of a generic signature
    /// (`r<index>…l`), and a bound on the text of each name (`A`…`EX`, the depth's digits, `, `).
    static let maximumPrintedParameters: UInt64 = 128
    static let parameterNameText: UInt64 = 16
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
        // The operators read exactly (`exactPrefix`), then the worst of every byte from there.
        var (total, start) = exactPrefix(name, longestWord: longestWord, multipliers: multipliers)
        for index in start..<count {
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
            if byte == UInt8(ascii: "_") { total = add(total, countText(name, indexEndingAt: index)) }
            if marks[index] & Mark.wordReference != 0 { total = add(total, longestWord) }
            let multiplier = UInt64(multipliers[index])
            if multiplier > 0 {
                total = total >= saturation / (multiplier + 1) ? saturation : total * (multiplier + 1)
            }
        }
        return total
    }

    /// Marks the substitutions of a run `A [<count>] <letter>… <LETTER>` (or `A <index> _`) read
    /// from `index + 1`, as `Demangler::demangleMultiSubstitutions` reads it; returns where the run
    /// ends (after its last letter or `_`), or nil when the runtime would refuse the name there.
    @discardableResult
    private static func markSubstitutions(_ name: UnsafeRawBufferPointer, after index: Int,
                                          multipliers: UnsafeMutableBufferPointer<UInt16>) -> Int? {
        var position = index + 1
        var repeats = 1
        while position < name.count {
            let byte = name[position]
            if isLowercase(byte) || isUppercase(byte) || byte == UInt8(ascii: "_") {
                // `<index>_` pushes one node; a letter pushes its node `repeats` times.
                let times = byte == UInt8(ascii: "_") ? 1 : repeats
                multipliers[position] = max(multipliers[position], UInt16(times))
                guard isLowercase(byte) else { return position + 1 }
                repeats = 1
                position += 1
            } else if let (value, end) = number(in: name, at: position) {
                guard value <= maximumRepeatCount else { return nil }  // the runtime refuses the name
                repeats = max(1, Int(value))
                position = end
            } else {
                return nil
            }
        }
        return nil
    }

    /// The bound of the name's first operators, read one after another exactly as
    /// `Demangler::demangleOperator` reads them, and where that reading stopped.
    ///
    /// Where the runtime's operators start is known from the start of the name for as long as each
    /// operator's own bytes are known: an identifier (`<length><text>`, not starting with `0`)
    /// holds text that is no operator (the `A` of `Attributes` is no substitution, its digits no
    /// repeat count); a substitution run, a standard substitution (`S[<count>][c]<letter>`, `So`,
    /// `SC`, `Sg`), a generic parameter (`q<index>`, `qd<index><index>`, `qz`), a retroactive
    /// conformance (`g<index>`), a generic signature with counts (`r(z|<index>)…l`), `H` and one
    /// letter, and the operators that read no byte of their own (`C D E F G K N O P V Z a c d h l m n
    /// s t x y z _`). The first byte that starts anything else (or anything this reading does not
    /// know to the byte: `0`, `T`, `W`, `M`, `v`, `f`, …) is where it stops, and the caller
    /// assumes the worst of every byte from there, as of the whole name before. Only the
    /// `$s`/`$S` manglings are read this way (`_T0` names differ in places).
    /// Each byte read here adds `fixedTextPerByte`, a standard substitution's count its repeats,
    /// and each substitution its multiplier, as in the caller's reading: the same sum over fewer
    /// assumed operators.
    static func exactPrefix(_ name: UnsafeRawBufferPointer, longestWord: UInt64,
                            multipliers: UnsafeMutableBufferPointer<UInt16>) -> (total: UInt64, end: Int) {
        let count = name.count
        var position: Int
        if count >= 2, name[0] == UInt8(ascii: "$"), name[1] == UInt8(ascii: "s") || name[1] == UInt8(ascii: "S") {
            position = 2
        } else if count >= 3, name[0] == UInt8(ascii: "_"), name[1] == UInt8(ascii: "$"),
                  name[2] == UInt8(ascii: "s") || name[2] == UInt8(ascii: "S") {
            position = 3
        } else {
            return (0, 0)
        }
        var total = UInt64(position) * fixedTextPerByte
        /// Adds the bytes `position..<end` (plain text and operator bytes) and moves past them.
        func take(to end: Int) {
            while position < end {
                total = add(total, fixedTextPerByte)
                let multiplier = UInt64(multipliers[position])
                if multiplier > 0 {
                    total = total >= saturation / (multiplier + 1) ? saturation : total * (multiplier + 1)
                }
                position += 1
            }
        }
        /// Where an index (`_` or `<digits>_`) that starts at `at` ends, or nil.
        func indexEnd(_ at: Int) -> Int? {
            guard at < count else { return nil }
            if name[at] == UInt8(ascii: "_") { return at + 1 }
            guard let (_, end) = number(in: name, at: at), end < count, name[end] == UInt8(ascii: "_") else { return nil }
            return end + 1
        }
        while position < count {
            let byte = name[position]
            switch byte {
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                guard let (length, end) = number(in: name, at: position), length <= UInt64(count - end) else {
                    return (total, position)
                }
                take(to: end + Int(length))
            case UInt8(ascii: "0"):
                guard let end = identifierWithWords(name, at: position, longestWord: longestWord, total: &total) else {
                    return (total, position)
                }
                take(to: end)
            case UInt8(ascii: "L"):
                guard position + 1 < count else { return (total, position) }
                let next = name[position + 1]
                if next == UInt8(ascii: "L") || next == UInt8(ascii: "l")
                    || (UInt8(ascii: "a")...UInt8(ascii: "j")).contains(next) || (UInt8(ascii: "A")...UInt8(ascii: "J")).contains(next) {
                    take(to: position + 2)
                } else {
                    guard let end = indexEnd(position + 1) else { return (total, position) }
                    take(to: end)
                }
            case UInt8(ascii: "A"):
                guard let end = markSubstitutions(name, after: position, multipliers: multipliers) else {
                    return (total, position)
                }
                take(to: end)
            case UInt8(ascii: "S"):
                guard position + 1 < count else { return (total, position) }
                let next = name[position + 1]
                if next == UInt8(ascii: "o") || next == UInt8(ascii: "C") || next == UInt8(ascii: "g") {
                    take(to: position + 2)
                    continue
                }
                var at = position + 1
                var repeats: UInt64 = 1
                if let (value, end) = number(in: name, at: at) {
                    guard value <= maximumRepeatCount else { return (total, position) }
                    repeats = max(1, value)
                    at = end
                }
                if at < count, name[at] == UInt8(ascii: "c") { at += 1 }
                guard at < count, isLowercase(name[at]) || isUppercase(name[at]) else { return (total, position) }
                if repeats > 1 { total = add(total, repeats * standardTypeText) }
                take(to: at + 1)
            case UInt8(ascii: "q"):
                guard position + 1 < count else { return (total, position) }
                if name[position + 1] == UInt8(ascii: "z") {
                    take(to: position + 2)
                } else if name[position + 1] == UInt8(ascii: "d") {
                    guard let first = indexEnd(position + 2), let second = indexEnd(first) else { return (total, position) }
                    take(to: second)
                } else {
                    guard let end = indexEnd(position + 1) else { return (total, position) }
                    take(to: end)
                }
            case UInt8(ascii: "g"):
                guard let end = indexEnd(position + 1) else { return (total, position) }
                take(to: end)
            case UInt8(ascii: "r"):
                var at = position + 1
                while at < count, name[at] != UInt8(ascii: "l") {
                    if name[at] == UInt8(ascii: "z") {
                        at += 1
                    } else if let end = indexEnd(at) {
                        // A count of parameters, each printed by name (`countText`).
                        total = add(total, countText(name, indexEndingAt: end - 1))
                        at = end
                    } else {
                        return (total, position)
                    }
                }
                guard at < count else { return (total, position) }
                take(to: at + 1)
            case UInt8(ascii: "Y"):
                // Type annotations of one letter (`Ya` async, `Yb` @Sendable, `Yc` global actor,
                // `Yi` isolated, `Yk` @noDerivative, `Yt` _const); others read more.
                guard position + 1 < count, "abcikt".utf8.contains(name[position + 1]) else { return (total, position) }
                take(to: position + 2)
            case UInt8(ascii: "H"):
                // Those that read no byte more (`HA`, `HD`, `HI` read an index, `HC` more: not here).
                guard position + 1 < count, "PpcnorF".utf8.contains(name[position + 1]) else {
                    return (total, position)
                }
                take(to: position + 2)
            default:
                guard "CDEFGKNOPVZacdhlmnpstxyz_".utf8.contains(byte) else { return (total, position) }
                take(to: position + 1)
            }
        }
        return (total, position)
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

    /// What an index `<digits>_` ending with the `_` at `underscore` may print beyond its bytes: a
    /// generic signature's count of parameters (`r<index>…l`, the only index printed as that many
    /// items) names up to `maximumPrintedParameters` of them. Nothing for an `_` after no digit
    /// (a count of one: within `fixedTextPerByte`). Linear: a digit run precedes one `_` at most.
    private static func countText(_ name: UnsafeRawBufferPointer, indexEndingAt underscore: Int) -> UInt64 {
        var start = underscore
        while start > 0, name[start - 1] >= UInt8(ascii: "0"), name[start - 1] <= UInt8(ascii: "9") { start -= 1 }
        guard start < underscore, let (value, _) = number(in: name, at: start) else { return 0 }
        return min(value + 2, maximumPrintedParameters) * parameterNameText
    }

    /// Where an identifier that starts with `0` at `at` ends, read as `Demangler::demangleIdentifier`
    /// reads it, adding `longestWord` to `total` for each word it copies (its bytes are added by
    /// the caller); nil where the runtime would refuse the name. `0 0 <length> [_] <punycode>`: one
    /// chunk; else `0`, then while words may follow: word letters (an upper-case one is the last),
    /// then `0` (the end) or `<length> <text>`.
    private static func identifierWithWords(_ name: UnsafeRawBufferPointer, at: Int, longestWord: UInt64,
                                            total: inout UInt64) -> Int? {
        let count = name.count
        var position = at + 1
        if position < count, name[position] == UInt8(ascii: "0") {
            // Punycode: its text decodes to no more code points than it has bytes.
            guard let (length, end) = number(in: name, at: position + 1), length > 0 else { return nil }
            var text = end
            if text < count, name[text] == UInt8(ascii: "_") { text += 1 }
            guard length <= UInt64(count - text) else { return nil }
            return text + Int(length)
        }
        var moreWords = true
        repeat {
            while moreWords && position < count && (isLowercase(name[position]) || isUppercase(name[position])) {
                if isUppercase(name[position]) { moreWords = false }
                total = add(total, longestWord)
                position += 1
            }
            if position < count, name[position] == UInt8(ascii: "0") { return position + 1 }
            guard let (length, end) = number(in: name, at: position), length > 0, length <= UInt64(count - end) else {
                return nil
            }
            position = end + Int(length)
        } while moreWords
        return position
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
