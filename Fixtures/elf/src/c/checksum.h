/* Inline helpers shared by both translation units of the C fixture.
 * The call chain hash_block -> hash_step -> mix -> rotl is four levels deep, so -O2 builds
 * have inlined frames nested three deep inside the loops of main.c and table.c; rotl is
 * always_inline, so even -O0 builds have one inlined subroutine per call site. */
#ifndef CHECKSUM_H
#define CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

static inline __attribute__((always_inline)) uint32_t rotl(uint32_t value, unsigned shift)
{
    return (value << (shift & 31)) | (value >> ((32 - shift) & 31));
}

static inline uint32_t mix(uint32_t state, uint32_t input)
{
    state ^= input * 0x9e3779b1u;
    return rotl(state, 13) * 5u + 0xe6546b64u;
}

static inline uint32_t hash_step(uint32_t state, const unsigned char *bytes, size_t index)
{
    uint32_t word = (uint32_t)bytes[index] | ((uint32_t)bytes[index + 1] << 8);
    return mix(state, word);
}

static inline uint32_t hash_block(uint32_t state, const unsigned char *bytes, size_t length)
{
    for (size_t index = 0; index + 1 < length; index += 2)
        state = hash_step(state, bytes, index);
    return state;
}

/* table.c */
typedef uint32_t (*transform_fn)(uint32_t);
extern const transform_fn transforms[3];
uint32_t apply_transforms(uint32_t value, const char *text, size_t length);
unsigned long fibonacci(unsigned n);

#endif
