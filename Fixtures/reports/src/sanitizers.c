/* The UBSan, TSan and LSan fixtures (see ../README.md): `sanitizers ubsan|tsan|lsan`, built once
 * per sanitizer. Each fault sits in an inlined helper one call below main. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int counter;

static inline __attribute__((always_inline)) int scaled(int value, int factor) {
    return value * factor; /* signed overflow with factor large enough */
}

__attribute__((noinline)) int overflow(int value) {
    int result = scaled(value, 1 << 30);
    __asm__ volatile("" ::: "memory");
    return result;
}

static inline __attribute__((always_inline)) void bump(void) {
    counter++; /* unsynchronized: a data race between the two threads */
}

__attribute__((noinline)) static void *worker(void *argument) {
    bump();
    return argument;
}

__attribute__((noinline)) int race(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    bump();
    pthread_join(thread, NULL);
    return counter;
}

static inline __attribute__((always_inline)) char *duplicate(const char *text) {
    char *copy = malloc(strlen(text) + 1);
    strcpy(copy, text);
    return copy;
}

__attribute__((noinline)) static void forget(void) {
    char *volatile copy = duplicate("leaked");
    copy = NULL; /* the only reference is gone */
}

__attribute__((noinline)) int leak(void) {
    forget();
    char scratch[512]; /* overwrite the stack slots that held the pointer */
    memset(scratch, 0, sizeof scratch);
    __asm__ volatile("" : : "r"(scratch) : "memory");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "ubsan") == 0) return overflow(argc + 2) == 0;
    if (strcmp(mode, "tsan") == 0) return race() == 0;
    if (strcmp(mode, "lsan") == 0) return leak();
    return 2;
}
