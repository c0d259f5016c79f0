/* libfault.so: the shared library of the report fixtures (see ../README.md).
 * Each entry point goes through an inlined helper so reports carry inline chains. */
#include <execinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fault.h"

static inline __attribute__((always_inline)) int checksum(const char *bytes, int count) {
    int sum = 0;
    for (int i = 0; i < count; i++) sum += bytes[i];
    return sum;
}

__attribute__((noinline)) int fault_use_after_free(int count) {
    char *bytes = malloc(count);
    memset(bytes, 7, count);
    free(bytes);
    return checksum(bytes, count); /* heap-use-after-free, read inside the inlined helper */
}

static inline __attribute__((always_inline)) void print_backtrace(void) {
    void *frames[32];
    int count = backtrace(frames, 32);
    backtrace_symbols_fd(frames, count, STDERR_FILENO);
}

__attribute__((noinline)) void fault_backtrace(int depth) {
    if (depth > 0) {
        fault_backtrace(depth - 1);
        __asm__ volatile("" ::: "memory"); /* keep the recursion a real call */
        return;
    }
    print_backtrace();
}

static inline __attribute__((always_inline)) void stop_here(void) {
    raise(SIGSTOP);
}

__attribute__((noinline)) void fault_stop(int depth) {
    if (depth > 0) {
        fault_stop(depth - 1);
        __asm__ volatile("" ::: "memory");
        return;
    }
    stop_here();
}
