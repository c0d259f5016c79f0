/* Second translation unit: non-inlined functions reached through a function-pointer table,
 * a recursive function, and another user of the inline chain from checksum.h. */
#include "checksum.h"

static uint32_t negate(uint32_t value) { return ~value; }
static uint32_t swap_halves(uint32_t value) { return rotl(value, 16); }
static uint32_t scramble(uint32_t value) { return mix(value, 0x1234567u); }

const transform_fn transforms[3] = { negate, swap_halves, scramble };

uint32_t apply_transforms(uint32_t value, const char *text, size_t length)
{
    for (int round = 0; round < 3; round++) {
        value = transforms[(value + (uint32_t)round) % 3](value);
        value = hash_block(value, (const unsigned char *)text, length);
    }
    return value;
}

unsigned long fibonacci(unsigned n)
{
    return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2);
}
