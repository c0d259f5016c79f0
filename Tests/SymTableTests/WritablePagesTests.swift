#if canImport(Glibc)
import Glibc
#endif
import SymBytes
import Testing

/// `WritablePages.populate` is advice: memory already written keeps its bytes, edges that do not
/// cover a whole page are left alone, and the memory stays usable.
@Suite struct WritablePagesTests {
    @Test func populatingKeepsWhatWasWritten() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let count = 8 * pageSize + 123
        let mapped = try #require(mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        #expect(mapped != MAP_FAILED)
        defer { munmap(mapped, count) }
        let bytes = mapped.bindMemory(to: UInt8.self, capacity: count)
        // Some pages written, some only read (the zero page), some untouched.
        for index in stride(from: 0, to: count, by: 7) where (index / pageSize) % 3 == 0 {
            bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 1)
        }
        var zeros = 0
        for index in stride(from: pageSize, to: count, by: 3 * pageSize) where bytes[index] == 0 { zeros += 1 }
        #expect(zeros > 0)
        // An unaligned start and end: only the whole pages inside are advised.
        WritablePages.populate(mapped + 5, count: count - 10)
        WritablePages.populate(mapped, count: 0)
        WritablePages.populate(mapped + 1, count: pageSize - 2)
        for index in 0..<count {
            let expected: UInt8 = index % 7 == 0 && (index / pageSize) % 3 == 0 ? UInt8(truncatingIfNeeded: index &* 31 &+ 1) : 0
            if bytes[index] != expected {
                Issue.record("byte \(index) is \(bytes[index]), expected \(expected)")
                break
            }
        }
        // Still ordinary writable memory.
        for index in 0..<count { bytes[index] = 0xAB }
        #expect((0..<count).allSatisfy { bytes[$0] == 0xAB })
    }
}
