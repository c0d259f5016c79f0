/// An identifier as mangled: ASCII code points, plus Punycode deltas when it had others.
struct RustIdentifier {
    /// The basic (ASCII) code points, or the whole identifier when it was ASCII.
    var ascii: ArraySlice<UInt8>
    /// Punycode deltas encoding the non-ASCII code points; empty for an ASCII identifier.
    var punycode: ArraySlice<UInt8>

    /// Whether nothing was mangled (a lowercase namespace may have an empty name).
    var isEmpty: Bool { ascii.isEmpty && punycode.isEmpty }
}
