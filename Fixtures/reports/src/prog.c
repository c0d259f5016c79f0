/* The executable of the report fixtures (see ../README.md): `prog MODE`. */
#include <stdio.h>
#include <string.h>
#include "fault.h"

static inline __attribute__((always_inline)) int run(const char *mode) {
    if (strcmp(mode, "uaf") == 0) return fault_use_after_free(16);
    if (strcmp(mode, "backtrace") == 0) { fault_backtrace(2); return 0; }
    if (strcmp(mode, "stop") == 0) { fault_stop(1); return 0; }
    fprintf(stderr, "usage: prog uaf|backtrace|stop\n");
    return 2;
}

__attribute__((noinline)) int dispatch(const char *mode) {
    int result = run(mode);
    __asm__ volatile("" ::: "memory");
    return result;
}

int main(int argc, char **argv) {
    return dispatch(argc > 1 ? argv[1] : "");
}
