/// Punycode decoding (RFC 3492) as used by Rust's v0 mangling for non-ASCII identifiers.
enum Punycode {
    /// Longest identifier decoded, in characters; `rustc-demangle` decodes into a buffer of this
    /// size and shows longer ones in their encoded form, as do we.
    static let maximumLength = 128

    /// Decodes an identifier from its basic code points and its deltas (the part after the last
    /// `_`, written in `a-z0-9`); `nil` when the deltas are malformed or the result is too long.
    static func decode(basic: ArraySlice<UInt8>, deltas: ArraySlice<UInt8>) -> [Unicode.Scalar]? {
        // RFC 3492 §5 parameter values.
        let base = 36, tMin = 1, tMax = 26, skew = 38, initialBias = 72, initialN = 0x80
        guard !deltas.isEmpty, basic.count <= maximumLength else { return nil }
        var output = basic.map { Unicode.Scalar($0) }
        var damp = 700
        var bias = initialBias
        var index = 0
        var codePoint = initialN
        var remaining = deltas[...]
        // RFC 3492 §6.2, decoding procedure.
        while !remaining.isEmpty {
            var delta = 0
            var weight = 1
            var k = 0
            while true {
                k += base
                let threshold = min(max(k - bias, tMin), tMax)
                guard let byte = remaining.popFirst() else { return nil }
                let digit: Int
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = Int(byte - UInt8(ascii: "a"))
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = 26 + Int(byte - UInt8(ascii: "0"))
                default: return nil
                }
                let (term, termOverflow) = digit.multipliedReportingOverflow(by: weight)
                let (sum, sumOverflow) = delta.addingReportingOverflow(term)
                guard !termOverflow, !sumOverflow else { return nil }
                delta = sum
                if digit < threshold { break }
                let (nextWeight, weightOverflow) = weight.multipliedReportingOverflow(by: base - threshold)
                guard !weightOverflow else { return nil }
                weight = nextWeight
            }
            let length = output.count + 1
            let (position, positionOverflow) = index.addingReportingOverflow(delta)
            guard !positionOverflow else { return nil }
            let (next, codePointOverflow) = codePoint.addingReportingOverflow(position / length)
            guard !codePointOverflow, next <= 0x10FFFF, let scalar = Unicode.Scalar(UInt32(next)),
                  output.count < maximumLength else { return nil }
            codePoint = next
            index = position % length
            output.insert(scalar, at: index)
            index += 1
            // RFC 3492 §6.1, bias adaptation.
            delta /= damp
            damp = 2
            delta += delta / length
            k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            bias = k + ((base - tMin + 1) * delta) / (delta + skew)
        }
        return output
    }
}
