import SymBytes
import SymCore
import SymELF
import SymReport
@testable import Symbolication
import Testing
import TestSupport

/// The vDSO images a Symbolicator reads from cores' memory are bounded: a long-running agent
/// walking cores of many kernels keeps the last `MemoryImages.capacity`, not every one.
@Suite struct MemoryImagesTests {
    @Test("A core's vDSO is kept by its build-id and used; images of more kernels than the capacity drop the least recently used first")
    func boundedLeastRecentlyUsed() throws {
        let directory = try #require(CoreFixtures.directory, "scripts/build-core-fixtures failed")
        let path = "\(directory)/threads.core"
        let symbolicator = Symbolicator(sources: SymbolSources(searchPaths: [], useModulePaths: true, cacheDirectory: nil))
        let report = try symbolicator.report(core: try CoreFile(file: MappedFile(path: path)), path: path)
        let vdso = try #require(report.modules.first { $0.path == "[vdso]" }?.buildID)
        #expect(symbolicator.memoryImages.withLock { $0.count } == 1)
        let image = try #require(symbolicator.memoryImages.withLock { $0.image(buildID: vdso) })
        // The same core walked again replaces its image, not adds one.
        _ = try symbolicator.report(core: try CoreFile(file: MappedFile(path: path)), path: path)
        #expect(symbolicator.memoryImages.withLock { $0.count } == 1)

        // Other kernels' vDSOs (the same bytes under other build-ids): the oldest goes first,
        // one used since stays.
        var images = MemoryImages()
        let kernels = (0...MemoryImages.capacity).map { "kernel-\($0)" }
        for id in kernels.prefix(MemoryImages.capacity) { images.keep(image, buildID: id) }
        #expect(images.count == MemoryImages.capacity)
        #expect(images.image(buildID: kernels[0]) != nil)  // now the most recently used
        images.keep(image, buildID: kernels[MemoryImages.capacity])
        #expect(images.count == MemoryImages.capacity)
        #expect(images.image(buildID: kernels[1]) == nil, "the least recently used image was kept")
        #expect(images.image(buildID: kernels[0]) != nil, "a recently used image was dropped")
        #expect(images.image(buildID: kernels[MemoryImages.capacity]) != nil)
        for id in (0..<100).map({ "more-\($0)" }) { images.keep(image, buildID: id) }
        #expect(images.count == MemoryImages.capacity)
    }
}
