// abort() inside a SIGSEGV handler: the stack goes raise/abort, the handler, the kernel's signal
// frame (__restore_rt), then the faulting function and its callers.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void handler(int signal) { (void)signal; abort(); }
__attribute__((noinline)) int fault(int *p) { *p = 7; return *p; }
__attribute__((noinline)) int caller(int *p) { return fault(p) + 1; }

int main(int argc, char **argv) {
    (void)argv;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigaction(SIGSEGV, &action, NULL);
    printf("%d\n", caller(argc > 5 ? &argc : NULL));
    return 0;
}
