/* Freestanding fixture for cross targets (aarch64, i386, armv7, riscv64): no libc, no
 * headers, entry point _start. Built with -nostdlib -static, so it needs no sysroot; it is
 * not meant to run, only to be parsed. Avoids division and 64-bit arithmetic so 32-bit
 * targets need no compiler-rt helpers. */

typedef unsigned int u32;

static inline __attribute__((always_inline)) u32 rotate(u32 value, u32 shift)
{
    return (value << (shift & 31)) | (value >> ((32 - shift) & 31));
}

static inline u32 mix(u32 state, u32 input)
{
    return rotate(state ^ (input * 0x9e3779b1u), 13) * 5u;
}

static inline u32 step(u32 state, const volatile u32 *words, u32 index)
{
    return mix(state, words[index]);
}

static volatile u32 input[16] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597};
volatile u32 result;

__attribute__((noinline)) u32 checksum(u32 seed, u32 rounds)
{
    u32 state = seed;
    for (u32 round = 0; round < rounds; round++)
        for (u32 i = 0; i < 16; i++)
            state = step(state, input, i);
    return state;
}

__attribute__((noinline)) u32 walk(u32 depth)
{
    return depth == 0 ? result : walk(depth - 1) + depth;
}

__attribute__((noreturn)) void _start(void)
{
    result = checksum(input[0], 4);
    result = walk(input[1] + 3);
    for (;;)
        __builtin_trap();
}
