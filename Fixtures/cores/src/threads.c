// Three workers waiting in the kernel (a condition variable, nanosleep, read on a pipe) while the
// main thread crashes: every thread's stack is walked out of libc's syscall wrappers.
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;
static int pipe_fds[2];

__attribute__((noinline)) static void wait_forever(void) {
    pthread_mutex_lock(&mutex);
    for (;;) pthread_cond_wait(&condition, &mutex);
}
__attribute__((noinline)) static void *waiter(void *arg) { (void)arg; pthread_barrier_wait(&started); wait_forever(); return NULL; }
__attribute__((noinline)) static void *sleeper(void *arg) {
    (void)arg;
    pthread_barrier_wait(&started);
    struct timespec t = {1000, 0};
    for (;;) nanosleep(&t, NULL);
}
__attribute__((noinline)) static void *reader(void *arg) {
    (void)arg;
    char c;
    pthread_barrier_wait(&started);
    for (;;) (void)read(pipe_fds[0], &c, 1);
}
__attribute__((noinline)) static void crash(volatile int *p) { *p = 1; }

int main(void) {
    pthread_t threads[3];
    if (pipe(pipe_fds) != 0) return 1;
    pthread_barrier_init(&started, NULL, 4);
    pthread_create(&threads[0], NULL, waiter, NULL);
    pthread_create(&threads[1], NULL, sleeper, NULL);
    pthread_create(&threads[2], NULL, reader, NULL);
    pthread_barrier_wait(&started);
    usleep(100000);  // the workers are in their system calls
    crash(NULL);
    return 0;
}
