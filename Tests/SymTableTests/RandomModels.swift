import TestSupport
import SymTable

/// Seeded random symbol models exercising every lookup rule: nested scopes with several ranges,
/// overlapping siblings, children outside their parents, line sequences with gaps, equal
/// addresses and overlaps, symbols of size 0 and duplicates at one address, and addresses above
/// 4 GiB or spanning more than 4 GiB.
enum RandomModels {
    /// How the addresses of a generated model are placed.
    enum Placement: CaseIterable {
        /// Near zero.
        case low
        /// Above 4 GiB, all within a 4 GiB window.
        case high
        /// Two clusters more than 4 GiB apart (range starts need 64 bits).
        case wide
    }

    static func model(seed: UInt64, placement: Placement) -> SymbolModel {
        var random = SplitMix64(seed: seed)
        var model = SymbolModel(module: ModuleIdentity(
            buildID: (0..<random.int(0...20)).map { _ in UInt8.random(in: 0...255, using: &random) },
            machine: UInt16(random.int(0...300)), is64Bit: random.chance(50), name: "lib\(seed).so"))

        // Strings: names, some duplicated at two indices, a canonically equal but byte-distinct pair.
        var names: [UInt32] = []
        for index in 0..<random.int(3...24) {
            let text = random.chance(10) ? "" : "_ZN4test\(index)\(random.chance(30) ? "dup" : "\(index)")Ev"
            names.append(model.appendString(text))
        }
        names.append(model.appendString("caf\u{E9}"))
        names.append(model.appendString("cafe\u{301}"))
        let directories = ["", "/src", "/usr/include", "/src"].map { model.appendString($0) }
        for index in 0..<random.int(1...8) {
            let name = random.chance(20) ? model.appendString("/abs/file\(index).h") : model.appendString("file\(index % 5).c")
            model.files.append(SourceFile(directory: directories[random.int(0...directories.count - 1)], name: name))
        }
        let fileCount = model.files.count

        let clusterBases: [UInt64] = switch placement {
        case .low: [random.u64(0...0x10000)]
        case .high: [random.u64(0x1_0000_0000...0x7FFF_0000_0000_0000)]
        case .wide:
            { let base = random.u64(0...0x7FFF_0000_0000); return [base, base + 0x1_0000_0000 + random.u64(0...0xFFFF_FFFF)] }()
        }
        func address(_ random: inout SplitMix64) -> UInt64 {
            clusterBases[random.int(0...clusterBases.count - 1)] + random.u64(0...0x600)
        }
        func name(_ random: inout SplitMix64) -> UInt32 { names[random.int(0...names.count - 1)] }

        // Physical functions, then inlined scopes nested under earlier scopes.
        for _ in 0..<random.int(0...8) {
            let first = UInt32(model.ranges.count)
            let count = random.int(1...3)
            for _ in 0..<count {
                let start = address(&random)
                model.ranges.append(AddressRange(start: start, end: start + random.u64(0...0x90)))
            }
            model.scopes.append(Scope(name: name(&random), firstRange: first, rangeCount: UInt32(count)))
        }
        if !model.scopes.isEmpty {
            for _ in 0..<random.int(0...20) {
                let parent = random.int(0...model.scopes.count - 1)
                let first = UInt32(model.ranges.count)
                let count = random.int(1...2)
                let parentRanges = model.ranges[model.scopes[parent].rangeIndices]
                for _ in 0..<count {
                    if let outer = parentRanges.randomElement(using: &random), outer.start < outer.end, random.chance(85) {
                        let start = random.u64(outer.start...outer.end - 1)
                        model.ranges.append(AddressRange(start: start, end: min(outer.end, start + random.u64(1...0x30))))
                    } else {
                        let start = address(&random)
                        model.ranges.append(AddressRange(start: start, end: start + random.u64(1...0x20)))
                    }
                }
                model.scopes.append(Scope(
                    name: name(&random), parent: UInt32(parent), firstRange: first, rangeCount: UInt32(count),
                    callFile: UInt32(random.int(0...fileCount - 1)), callLine: UInt32(random.int(0...3000)),
                    callColumn: random.chance(5) ? 70_000 : UInt32(random.int(0...90))))
            }
        }

        // Line sequences: sorted rows, equal addresses, gaps between sequences, overlaps.
        for _ in 0..<random.int(0...5) {
            var at = address(&random)
            for _ in 0..<random.int(0...20) {
                model.lines.append(LineRow(address: at, file: UInt32(random.int(0...fileCount - 1)),
                                           line: random.chance(10) ? 0 : UInt32(random.int(1...400)),
                                           column: UInt32(random.int(0...40))))
                at += random.chance(15) ? 0 : random.u64(1...0x20)
            }
            model.lines.append(LineRow(address: at + random.u64(0...0x10), file: 0, line: 0, isEndSequence: true))
        }
        if random.chance(10) {
            // Trailing rows with no end-of-sequence row cover nothing.
            model.lines.append(LineRow(address: address(&random), file: 0, line: 7))
        }

        // Symbols: sized, size 0, several at one address.
        for _ in 0..<random.int(0...10) {
            let at = address(&random)
            for _ in 0..<(random.chance(25) ? random.int(2...3) : 1) {
                model.symbols.append(SymbolEntry(name: name(&random), address: at,
                                                 size: random.chance(30) ? 0 : random.u64(1...0x100)))
            }
        }
        return model
    }

    /// Random addresses near the model's clusters plus its boundaries.
    static func probeAddresses(for model: SymbolModel, oracle: ModelOracle, seed: UInt64) -> [UInt64] {
        var random = SplitMix64(seed: seed ^ 0xADD7)
        var addresses = oracle.interestingAddresses()
        let points = model.ranges.map(\.start) + model.lines.map(\.address) + model.symbols.map(\.address)
        for _ in 0..<200 {
            guard let near = points.randomElement(using: &random) else { break }
            addresses.append(near &+ random.u64(0...0x100) &- 0x80)
        }
        return addresses
    }
}
