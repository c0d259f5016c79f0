/* A C program that dumps core (see ../README.md): a null store inside an inlined helper. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) void store(int *slot, int value) {
    *slot = value; /* SIGSEGV: slot is null */
}

__attribute__((noinline)) void update(int *slot, int depth) {
    if (depth > 0) { update(slot, depth - 1); __asm__ volatile("" ::: "memory"); return; }
    store(slot, 42);
}

int main(int argc, char **argv) {
    update(argc > 5 ? malloc(4) : NULL, 2);
    puts("unreachable");
    return 0;
}
