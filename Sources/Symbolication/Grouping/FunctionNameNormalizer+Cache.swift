import Synchronization

extension FunctionNameNormalizer {
    /// `normalize`, remembered: crashes of one program name the same functions again and again,
    /// and a crash service signs every crash it stores (and again after late symbols). A
    /// direct-mapped table of 4,096 entries, a slot per hashed name (a collision only costs
    /// normalising again), so its memory is bounded whatever the crashes hold.
    public static func normalizeRemembered(_ function: String, mangled: String? = nil) -> String {
        // `normalize` looks at the mangled name only for its kind: Swift, C++ or neither.
        let kind: UInt8 = mangled.map { isSwiftMangled($0) ? 1 : $0.hasPrefix("_Z") ? 2 : 0 } ?? 0
        var hasher = Hasher()
        hasher.combine(function)
        hasher.combine(kind)
        let slot = hasher.finalize() & (rememberedSlots - 1)
        if let hit = remembered.withLock({ table -> String? in
            guard let entry = table[slot], entry.kind == kind, entry.function == function else { return nil }
            return entry.normalized
        }) {
            return hit
        }
        let normalized = normalize(function, mangled: mangled)
        remembered.withLock { $0[slot] = (function, kind, normalized) }
        return normalized
    }

    private static let rememberedSlots = 4096
    private static let remembered = Mutex<[(function: String, kind: UInt8, normalized: String)?]>(
        Array(repeating: nil, count: rememberedSlots))
}
