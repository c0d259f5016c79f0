/* libgreet.so: exported functions, a hidden (non-exported) helper, and static inline
 * helpers nested two deep, so a crash inside the library has inlined frames. */
#include <stdio.h>
#include <string.h>

#include "greet.h"

static inline unsigned fold(unsigned state, unsigned char byte)
{
    return (state ^ byte) * 16777619u;
}

static inline unsigned fold_text(unsigned state, const char *text)
{
    while (*text)
        state = fold(state, (unsigned char)*text++);
    return state;
}

/* Hidden visibility: in .symtab but not .dynsym. */
__attribute__((visibility("hidden"), noinline)) size_t greet_copy(char *to, size_t capacity, const char *from)
{
    size_t length = strlen(from);
    if (length >= capacity)
        length = capacity - 1;
    memcpy(to, from, length);
    to[length] = 0;
    return length;
}

size_t greet_format(char *buffer, size_t capacity, const char *name, int times)
{
    size_t used = 0;
    for (int i = 0; i < times && used + 1 < capacity; i++)
        used += greet_copy(buffer + used, capacity - used, i ? ", hello " : "hello ");
    if (used + 1 < capacity)
        used += greet_copy(buffer + used, capacity - used, name);
    return used;
}

unsigned greet_checksum(const char *text)
{
    return fold_text(2166136261u, text);
}

static inline int load(const int *slot)
{
    return *slot * 2; /* the crash line */
}

static inline int load_twice(const int *slot)
{
    return load(slot) + load(slot + 1);
}

int greet_crash(const int *slot)
{
    return load_twice(slot);
}
