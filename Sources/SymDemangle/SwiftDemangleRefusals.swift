import Synchronization

/// Counts of Swift names left mangled because of a limit (`SwiftDemangleRefusal`), so that a
/// front end can say once why some names were not demangled.
public enum Refusals {
    private static let counts = Mutex<[SwiftDemangleRefusal: Int]>([:])

    /// Records one name refused for `reason`.
    static func record(_ reason: SwiftDemangleRefusal) {
        counts.withLock { $0[reason, default: 0] += 1 }
    }

    /// Names refused so far in this process, by reason.
    public static var swiftNames: [SwiftDemangleRefusal: Int] {
        counts.withLock { $0 }
    }
}
