import CMalloc

/// glibc malloc settings: for converting big files, where the peak memory counts, and for the
/// server, where the cost per request counts.
public enum HeapTuning {
    /// Turns off glibc's adaptive mmap threshold. After the first large free, glibc serves
    /// allocations of up to 32 MiB from the heap and keeps them there once freed. `dump` builds and
    /// frees several arrays of tens of megabytes one after another, and all of them would stay
    /// resident. With the threshold fixed, big arrays are mapped and go back to the system when
    /// freed.
    public static func fixMmapThreshold() {
        _ = mallopt(M_MMAP_THRESHOLD, 128 << 10)
    }

    /// Gives the free pages inside malloc's heaps back to the system (`malloc_trim`). Building a
    /// model leaves megabytes of small blocks freed in the middle of the converting thread's heap
    /// (the walkers' dictionaries, symbol names). malloc keeps them resident, so they would count
    /// in the writer's peak.
    public static func returnFreePages() {
        _ = malloc_trim(0)
    }

    /// Keeps up to `trim` bytes free at the top of each of malloc's heaps instead of giving them
    /// back to the system at once, and serves blocks of up to `mmap` bytes from the heaps. A
    /// server request allocates and frees tens of kilobytes (the rendered answer and its response
    /// buffer): with glibc's defaults each free of 64 KiB or more next to the top of a heap trims
    /// it (`heap_trim`, `MADV_DONTNEED`), and the next request faults the same pages in again
    /// (9 page faults a request, a tenth of the server's CPU for `POST …/symbolicate`). The
    /// memory kept is at most `trim` per heap (glibc makes at most 8 heaps a core).
    public static func keepFreedHeap(trim: Int = 4 << 20, mmap: Int = 1 << 20) {
        _ = mallopt(M_TRIM_THRESHOLD, Int32(trim))
        _ = mallopt(M_MMAP_THRESHOLD, Int32(mmap))
    }
}
