/// A report's modules by address range: starts sorted once and searched by bisection, so that
/// placing each of a report's frames costs a logarithm of the module count, not a scan of every
/// module (a hostile report naming 100,000 modules and frames stays fast).
struct ModuleRanges {
    private var starts: [UInt64] = []
    private var sizes: [UInt64] = []
    private var indices: [Int] = []
    /// The highest end (saturated) among the entries up to each position: how far back a range
    /// that starts lower can still reach.
    private var reach: [UInt64] = []

    /// How many overlapping ranges a lookup examines below the closest start. Modules of a real
    /// report do not overlap; a hostile report's overlaps cost at most this many steps.
    static let overlapSteps = 64

    /// Indexes the modules of `modules` that have a load address and a non-zero size.
    init(_ modules: [ReportModule]) {
        var entries: [(start: UInt64, size: UInt64, index: Int)] = []
        for (index, module) in modules.enumerated() {
            guard let start = module.loadAddress, let size = module.size, size > 0 else { continue }
            entries.append((start, size, index))
        }
        entries.sort { $0.start != $1.start ? $0.start < $1.start : $0.index < $1.index }
        starts.reserveCapacity(entries.count)
        sizes.reserveCapacity(entries.count)
        indices.reserveCapacity(entries.count)
        reach.reserveCapacity(entries.count)
        var highest: UInt64 = 0
        for entry in entries {
            starts.append(entry.start)
            sizes.append(entry.size)
            indices.append(entry.index)
            let (end, overflow) = entry.start.addingReportingOverflow(entry.size)
            highest = max(highest, overflow ? .max : end)
            reach.append(highest)
        }
    }

    /// The module whose `[load address, load address + size)` holds `address`; among overlapping
    /// ones, the first in report order.
    func module(containing address: UInt64) -> Int? {
        // The first position whose start is above the address.
        var low = 0, high = starts.count
        while low < high {
            let middle = low + (high - low) / 2
            if starts[middle] <= address { low = middle + 1 } else { high = middle }
        }
        var found: Int?
        var position = low - 1, steps = 0
        while position >= 0 && steps < Self.overlapSteps && (reach[position] > address || reach[position] == .max) {
            if address - starts[position] < sizes[position] { found = min(found ?? .max, indices[position]) }
            position -= 1
            steps += 1
        }
        return found
    }
}
