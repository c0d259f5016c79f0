/* big-heap: a core of any size. Touches BIG_HEAP_MB MiB of heap (default 256) so that the
 * kernel dumps it, starts two threads that wait, then writes through a null pointer three calls
 * deep. The core's size follows BIG_HEAP_MB; its stacks do not. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *waiter(void *argument) {
    pause();
    return argument;
}

__attribute__((noinline)) static void store(volatile int *target) { *target = 1; }

__attribute__((noinline)) static void fill(size_t megabytes) {
    char *heap = malloc(megabytes << 20);
    if (heap == NULL) abort();
    memset(heap, 0x5a, megabytes << 20);
    store(NULL);
    heap[0] = 0;
}

int main(void) {
    const char *text = getenv("BIG_HEAP_MB");
    size_t megabytes = text ? (size_t)atol(text) : 256;
    pthread_t threads[2];
    for (int index = 0; index < 2; index++) pthread_create(&threads[index], NULL, waiter, NULL);
    usleep(10000);
    fill(megabytes);
    return 0;
}
