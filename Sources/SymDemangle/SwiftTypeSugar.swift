/// Brings the Swift runtime's demangled text (`swift_demangle`, which spells every type in full) to
/// `swift-demangle`'s default spelling, which writes the standard library's four sugared types as
/// Swift programmers write them: `Swift.Array<A>` as `[A]`, `Swift.Dictionary<K, V>` as `[K : V]`,
/// `Swift.Optional<A>` as `A?` and `Swift.ImplicitlyUnwrappedOptional<A>` as `A!`.
///
/// This is the rule of the toolchain's `NodePrinter::printBoundGeneric` (option
/// `SynthesizeSugarOnTypes`), applied to the printed text in one pass: a bound generic of exactly
/// those types of module `Swift` becomes its sugar, and an optional's wrapped type is put in
/// parentheses when it is not a simple type (a function type, a protocol composition, an
/// existential or pack form, an attributed type). Text that does not balance is left as it is.
enum SwiftTypeSugar {
    /// The sugared types: how each is spelled in full, and its kind.
    private static let sugaredTypes: [(prefix: [UInt8], kind: Kind)] = [
        (Array("Swift.Optional<".utf8), .optional),
        (Array("Swift.ImplicitlyUnwrappedOptional<".utf8), .implicitlyUnwrappedOptional),
        (Array("Swift.Array<".utf8), .array),
        (Array("Swift.Dictionary<".utf8), .dictionary),
    ]

    /// What an open bracket in the text is.
    private enum Kind {
        case optional, implicitlyUnwrappedOptional, array, dictionary
        /// Any other `<`, `(` or `[`.
        case other
    }

    /// An open bracket and what was seen at its top level.
    private struct Frame {
        var kind: Kind
        /// The byte that closes it.
        var closer: UInt8
        /// Where the spelled-out prefix (`Swift.Array<`) starts in the output.
        var prefixStart: Int
        /// Where its arguments start in the output.
        var argumentsStart: Int
        /// Where the first top-level `, ` is in the output (a dictionary's key ends there).
        var firstComma: Int? = nil
        /// Whether the top level has a function arrow or a composition (`A -> B`, `P & Q`).
        var hasOperator = false
    }

    /// Whether `text` names one of the sugared types (checked before copying it).
    static func mayNeedSugar(_ text: UnsafeRawBufferPointer) -> Bool {
        guard text.count >= 12 else { return false }
        var index = 0
        while index + 12 <= text.count {
            if text[index] == UInt8(ascii: "S"), text[index + 5] == UInt8(ascii: "."),
               text[index + 1] == UInt8(ascii: "w"), text[index + 4] == UInt8(ascii: "t") {
                switch text[index + 6] {
                case UInt8(ascii: "O"), UInt8(ascii: "A"), UInt8(ascii: "D"), UInt8(ascii: "I"): return true
                default: break
                }
            }
            index += 1
        }
        return false
    }

    /// `text` with the sugared types spelled as `swift-demangle` spells them.
    static func sugar(_ text: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var stack: [Frame] = []
        var index = 0
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "S"), index == 0 || !isNameByte(text[index - 1]),
               let (prefix, kind) = sugaredTypes.first(where: { startsWith(text, at: index, $0.prefix) }) {
                stack.append(Frame(kind: kind, closer: UInt8(ascii: ">"), prefixStart: out.count,
                                   argumentsStart: out.count + prefix.count))
                out.append(contentsOf: prefix)
                index += prefix.count
                continue
            }
            switch byte {
            case UInt8(ascii: "<"), UInt8(ascii: "("), UInt8(ascii: "["):
                let closer = byte == UInt8(ascii: "<") ? UInt8(ascii: ">") : byte == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "]")
                stack.append(Frame(kind: .other, closer: closer, prefixStart: out.count, argumentsStart: out.count + 1))
                out.append(byte)
            case UInt8(ascii: ">") where index > 0 && text[index - 1] == UInt8(ascii: "-"):
                // The `>` of a function arrow.
                out.append(byte)
                if !stack.isEmpty { stack[stack.count - 1].hasOperator = true }
            case UInt8(ascii: ">"), UInt8(ascii: ")"), UInt8(ascii: "]"):
                guard let frame = stack.last, frame.closer == byte else {
                    // An operator's name (`static Swift.Int.< infix`) or unbalanced text: drop
                    // what is open, so that no sugar is made across it.
                    stack.removeAll()
                    out.append(byte)
                    break
                }
                stack.removeLast()
                if frame.kind == .other {
                    out.append(byte)
                } else {
                    close(frame, in: &out)
                }
            case UInt8(ascii: ","):
                if !stack.isEmpty, stack[stack.count - 1].firstComma == nil { stack[stack.count - 1].firstComma = out.count }
                out.append(byte)
            case UInt8(ascii: "&"):
                if !stack.isEmpty { stack[stack.count - 1].hasOperator = true }
                out.append(byte)
            default:
                out.append(byte)
            }
            index += 1
        }
        return out
    }

    /// Replaces the spelled-out type that `frame` opened (its arguments are the end of `out`) with
    /// its sugar.
    private static func close(_ frame: Frame, in out: inout [UInt8]) {
        let arguments = Array(out[frame.argumentsStart...])
        // `Swift.Array<A where A: P>` is a constrained extension's context, not a bound type.
        guard !hasTopLevelWhere(arguments) else { return out.append(UInt8(ascii: ">")) }
        var sugared: [UInt8] = []
        switch frame.kind {
        case .optional, .implicitlyUnwrappedOptional:
            guard frame.firstComma == nil else { return out.append(UInt8(ascii: ">")) }
            let needsParentheses = frame.hasOperator || !isSimple(arguments)
            if needsParentheses { sugared.append(UInt8(ascii: "(")) }
            sugared += arguments
            if needsParentheses { sugared.append(UInt8(ascii: ")")) }
            sugared.append(frame.kind == .optional ? UInt8(ascii: "?") : UInt8(ascii: "!"))
        case .array:
            guard frame.firstComma == nil else { return out.append(UInt8(ascii: ">")) }
            sugared = [UInt8(ascii: "[")] + arguments + [UInt8(ascii: "]")]
        case .dictionary:
            guard let comma = frame.firstComma, comma + 1 < out.count, out[comma + 1] == UInt8(ascii: " ") else {
                return out.append(UInt8(ascii: ">"))
            }
            let key = out[frame.argumentsStart..<comma], value = out[(comma + 2)...]
            guard !value.contains(UInt8(ascii: ",")) || balancedComma(value) else { return out.append(UInt8(ascii: ">")) }
            sugared = [UInt8(ascii: "[")] + key + Array(" : ".utf8) + value + [UInt8(ascii: "]")]
        case .other:
            return
        }
        out.replaceSubrange(frame.prefixStart..., with: sugared)
    }

    /// Whether `arguments` has ` where ` outside brackets.
    private static func hasTopLevelWhere(_ arguments: [UInt8]) -> Bool {
        let pattern = Array(" where ".utf8)
        var depth = 0
        var previous: UInt8 = 0
        for (index, byte) in arguments.enumerated() {
            switch byte {
            case UInt8(ascii: "<"), UInt8(ascii: "("), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ">") where previous != UInt8(ascii: "-"): depth -= 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: " ") where depth == 0 && startsWith(arguments, at: index, pattern): return true
            default: break
            }
            previous = byte
        }
        return false
    }

    /// Whether every `,` in `value` is inside brackets (so the dictionary had two arguments).
    private static func balancedComma(_ value: ArraySlice<UInt8>) -> Bool {
        var depth = 0
        var previous: UInt8 = 0
        for byte in value {
            switch byte {
            case UInt8(ascii: "<"), UInt8(ascii: "("), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: ">") where previous != UInt8(ascii: "-"): depth -= 1
            case UInt8(ascii: ")"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ",") where depth == 0: return false
            default: break
            }
            previous = byte
        }
        return true
    }

    /// Whether a type's text is what `NodePrinter::isSimpleType` calls simple, judged by how the
    /// kinds it calls not simple are printed: attributed and ownership-qualified types, `any`,
    /// `some`, packs.
    private static func isSimple(_ type: [UInt8]) -> Bool {
        for prefix in ["@", "inout ", "__owned ", "__shared ", "borrowing ", "consuming ", "sending ", "isolated ",
                       "any ", "some ", "repeat ", "each ", "__shared ", "weak ", "unowned ", "__unowned "]
            where startsWith(type, at: 0, Array(prefix.utf8)) {
            return false
        }
        return true
    }

    /// Whether `byte` can be part of an identifier or a qualified name before a type.
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".") || byte >= 0x80
    }

    private static func startsWith(_ text: [UInt8], at index: Int, _ prefix: [UInt8]) -> Bool {
        index + prefix.count <= text.count && text[index..<(index + prefix.count)].elementsEqual(prefix)
    }
}
