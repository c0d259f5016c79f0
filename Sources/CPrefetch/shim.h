// Cache hints that Swift cannot spell: a read prefetch (no fault, no wait, no result).
#ifndef CRASHSYM_CPREFETCH_H
#define CRASHSYM_CPREFETCH_H

/// Asks the processor to start loading the cache line holding `address` (read, kept in all
/// cache levels). Returns at once; an address that is not mapped is ignored.
static inline __attribute__((always_inline)) void crashsym_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
