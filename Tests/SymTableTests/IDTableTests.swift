import TestSupport
import Testing
@testable import SymTable

/// `IDTable`, the writer's deduplication index: every id stored is found again by its record,
/// whatever the hashes (here deliberately colliding), across growth; absent records are not found.
@Suite struct IDTableTests {
    @Test(arguments: [1, 7, 1 << 20])
    func findsEveryRecordAcrossGrowth(distinctHashes: Int) {
        var generator = SplitMix64(seed: UInt64(distinctHashes))
        let records = (0..<5000).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        func hash(_ record: UInt64) -> UInt64 { IDTable.mix(record % UInt64(distinctHashes)) }
        var table = IDTable()
        for (id, record) in records.enumerated() {
            #expect(table.find(hash: hash(record), { records[Int($0)] == record }) == nil)
            table.insert(UInt32(id), hash: hash(record)) { hash(records[Int($0)]) }
        }
        #expect(table.count == records.count)
        for (id, record) in records.enumerated() {
            #expect(table.find(hash: hash(record), { records[Int($0)] == record }) == UInt32(id))
        }
        let absent = records[0] &+ 1
        #expect(table.find(hash: hash(absent), { records[Int($0)] == absent }) == nil)
    }

    /// Ids need not be dense: the table grows until an id fits below the hash bits it keeps.
    @Test func findsSparseIDs() {
        var generator = SplitMix64(seed: 7)
        let records = (0..<3000).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        func id(_ position: Int) -> UInt32 { UInt32(position * 97 + 5) }
        var table = IDTable()
        var recordOfID: [UInt32: UInt64] = [:]
        for (position, record) in records.enumerated() {
            recordOfID[id(position)] = record
            table.insert(id(position), hash: IDTable.mix(record)) { IDTable.mix(recordOfID[$0]!) }
        }
        for (position, record) in records.enumerated() {
            #expect(table.find(hash: IDTable.mix(record), { recordOfID[$0] == record }) == id(position))
        }
    }

    @Test func byteHashesDependOnEveryByte() {
        var seen = Set<UInt64>()
        for length in 0..<40 {
            var bytes = [UInt8](repeating: 0x61, count: length)
            bytes.withUnsafeBytes { _ = seen.insert(IDTable.hash($0)) }
            for index in bytes.indices {
                bytes[index] ^= 1
                bytes.withUnsafeBytes { _ = seen.insert(IDTable.hash($0)) }
                bytes[index] ^= 1
            }
        }
        #expect(seen.count == 40 + (0..<40).reduce(0, +))
    }
}
