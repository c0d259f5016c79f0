/* C fixture: inlining in loops, nested inlines, hot/cold splitting, two translation units.
 * `prog crash` dereferences a null pointer three inlined frames deep, so the fixture can also
 * produce real crash reports. Output depends on the arguments so nothing folds to a constant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"

struct record {
    const char *name;
    uint32_t weight;
};

/* Cold and never inlined: gcc moves calls to it into main.cold / summarise.cold. */
static void __attribute__((cold, noinline)) fail(const char *what, int code)
{
    fprintf(stderr, "fixture: %s (%d)\n", what, code);
    exit(code);
}

static inline uint32_t crash_inner(const uint32_t *slot)
{
    return *slot + 1; /* the crash line: slot is NULL in crash mode */
}

static inline uint32_t crash_middle(const uint32_t *slot, uint32_t seed)
{
    return crash_inner(slot) ^ seed;
}

static inline uint32_t crash_outer(const uint32_t *slot, uint32_t seed)
{
    return crash_middle(slot, seed * 3u) + 7u;
}

static uint32_t __attribute__((noinline)) summarise(const struct record *records, size_t count)
{
    uint32_t state = 0x811c9dc5u;
    for (size_t i = 0; i < count; i++) {
        size_t length = strlen(records[i].name);
        if (__builtin_expect(length == 0, 0))
            fail("empty record name", 3);
        state = hash_block(state, (const unsigned char *)records[i].name, length);
        state += records[i].weight;
    }
    return state;
}

int main(int argc, char **argv)
{
    if (__builtin_expect(argc > 64, 0))
        fail("too many arguments", 2);

    struct record records[64];
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        records[count].name = argv[i];
        records[count].weight = (uint32_t)i;
        count++;
    }

    if (argc > 1 && strcmp(argv[1], "crash") == 0) {
        volatile uintptr_t address = 0;
        printf("%u\n", crash_outer((const uint32_t *)address, (uint32_t)argc));
    }

    uint32_t summary = summarise(records, count);
    uint32_t transformed = apply_transforms(summary, argv[0], strlen(argv[0]));
    printf("%08x %08x %lu\n", summary, transformed, fibonacci((unsigned)argc + 10u));
    return 0;
}
