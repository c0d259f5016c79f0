import SymELF

/// ELF images read from reports' memory (a core's vDSO), by build-id: the symbols of a module
/// that no file holds. Bounded, the least recently used dropped first: a long-running agent or
/// server walks cores of many kernels, and each image is only needed until its module is resolved
/// (the module's slot keeps what was made of it).
struct MemoryImages {
    /// How many images are kept: more kernels than a fleet runs at once, a few MiB at most
    /// (a vDSO is 8 KiB; the walker reads at most 1 MiB of one).
    static let capacity = 16

    /// Least recently used first.
    private var entries: [(buildID: String, image: ELFFile)] = []

    /// The number of images kept.
    var count: Int { entries.count }

    /// Keeps `image` under `buildID` (replacing one kept under it), dropping the least recently
    /// used image beyond `capacity`.
    mutating func keep(_ image: ELFFile, buildID: String) {
        entries.removeAll { $0.buildID == buildID }
        if entries.count >= Self.capacity { entries.removeFirst(entries.count - Self.capacity + 1) }
        entries.append((buildID, image))
    }

    /// The image kept under `buildID` (now the most recently used), else nil.
    mutating func image(buildID: String) -> ELFFile? {
        guard let index = entries.firstIndex(where: { $0.buildID == buildID }) else { return nil }
        let entry = entries.remove(at: index)
        entries.append(entry)
        return entry.image
    }
}
