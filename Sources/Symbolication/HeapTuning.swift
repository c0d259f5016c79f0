import CMalloc

/// glibc malloc settings for converting big files, where the peak memory counts.
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
}
