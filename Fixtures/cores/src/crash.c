// A null-pointer write three calls deep: the plain crash (built -O0 and -O2 -fomit-frame-pointer).
#include <stdio.h>

__attribute__((noinline)) int leaf(int *p) { *p = 42; return *p + 1; }
__attribute__((noinline)) int middle(int *p, int n) { return leaf(p) * n + 1; }
__attribute__((noinline)) int top(int *p) { return middle(p, 3) - 2; }

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", top(argc > 5 ? &argc : NULL));
    return 0;
}
