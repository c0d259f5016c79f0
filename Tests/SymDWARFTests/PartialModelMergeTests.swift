import TestSupport
import SymBytes
@testable import SymDWARF
import SymTable
import Testing

/// `PartialModel.merge` rewrites the walkers' scopes and ranges in place and hands them to the
/// builder (the first part's arrays become the model's): the model must be what appending every
/// scope with `ModelBuilder.addScope` makes, dropped ranges (empty, at 0) and dropped scopes
/// (no range left, their children then without parent) included, whatever the split into parts.
@Suite struct PartialModelMergeTests {
    /// Seeded parts: nested scopes (parents before children), some ranges empty or at 0.
    static func parts(seed: UInt64, count: Int) -> [DWARFReader.PartialModel] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            var part = DWARFReader.PartialModel()
            for index in 0..<6 {
                part.texts.append("name\(Int.random(in: 0..<5, using: &generator))-\(index)")
                part.isPath.append(false)
            }
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                let first = part.ranges.count
                for _ in 0..<Int.random(in: 0...3, using: &generator) {
                    let start = Int.random(in: 0..<4, using: &generator) == 0 ? 0 : UInt64.random(in: 1...0x1000, using: &generator)
                    let length = Int.random(in: 0..<4, using: &generator) == 0 ? 0 : UInt64.random(in: 1...0x40, using: &generator)
                    part.ranges.append(AddressRange(start: start, end: start + length))
                }
                let parent = part.scopes.isEmpty || Bool.random(using: &generator)
                    ? Scope.noParent : UInt32.random(in: 0..<UInt32(part.scopes.count), using: &generator)
                part.scopes.append(Scope(
                    name: UInt32.random(in: 0..<UInt32(part.texts.count), using: &generator), parent: parent,
                    firstRange: UInt32(first), rangeCount: UInt32(part.ranges.count - first),
                    callFile: 0, callLine: UInt32.random(in: 0..<100, using: &generator), callColumn: 3))
            }
            return part
        }
    }

    /// The model `addScope` builds from the same parts, one scope at a time.
    static func expected(_ parts: [DWARFReader.PartialModel]) -> SymbolModel {
        var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: 62, is64Bit: true, name: "m"))
        for part in parts {
            let texts = (0..<part.texts.count).map { $0 == 0 ? 0 : builder.intern(part.texts[$0]) }
            var scopeIndex = [UInt32](repeating: Scope.noParent, count: part.scopes.count)
            for (position, scope) in part.scopes.enumerated() {
                let parent = scope.parent == Scope.noParent ? Scope.noParent : scopeIndex[Int(scope.parent)]
                if let added = builder.addScope(name: texts[Int(scope.name)], parent: parent,
                                                ranges: part.ranges[scope.rangeIndices],
                                                callFile: texts[Int(scope.callFile)], callLine: scope.callLine,
                                                callColumn: scope.callColumn) {
                    scopeIndex[position] = added
                }
            }
        }
        return builder.finish().model
    }

    @Test(arguments: [(1, 1), (2, 1), (3, 2), (4, 3), (5, 4)])
    func mergeMatchesAddingScopesOneByOne(seed: UInt64, partCount: Int) {
        let parts = Self.parts(seed: seed, count: partCount)
        var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: 62, is64Bit: true, name: "m"))
        DWARFReader.PartialModel.merge(parts, into: &builder)
        let model = builder.finish().model
        let expected = Self.expected(parts)
        #expect(model.strings == expected.strings)
        #expect(model.scopes == expected.scopes)
        #expect(model.ranges == expected.ranges)
        #expect(!model.scopes.isEmpty)
    }
}
