import Synchronization

/// Counts of Swift names left mangled because of a limit (`SwiftDemangleRefusal`), so that a
/// front end can say once why some names were not demangled.
public enum DemangleRefusals {
    private static let counts = Mutex<[SwiftDemangleRefusal: Int]>([:])

    /// Records one name refused for `reason`.
    static func record(_ reason: SwiftDemangleRefusal) {
        counts.withLock { $0[reason, default: 0] += 1 }
    }

    /// Names refused so far in this process, by reason.
    public static var swiftNames: [SwiftDemangleRefusal: Int] {
        counts.withLock { $0 }
    }

    /// One sentence saying how many Swift names were left mangled and why, or nil when none was.
    public static func summary() -> String? {
        let counts = swiftNames
        guard !counts.isEmpty else { return nil }
        let total = counts.values.reduce(0, +)
        let reasons = counts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key.description < $1.key.description) }
            .map { "\($0.value) \($0.key)" }
        return "\(total) Swift name\(total == 1 ? "" : "s") left mangled: " + reasons.joined(separator: "; ")
    }
}
