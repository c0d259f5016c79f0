// A call through a null function pointer: the faulting pc is 0, in no module, so no CFI
// describes the first frame; its caller's return address is at the top of the stack.
#include <stdio.h>

typedef int (*callback)(int);

__attribute__((noinline)) int invoke(callback function, int value) { return function(value) + 1; }

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", invoke(argc > 5 ? (callback)0x1234 : (callback)0, argc));
    return 0;
}
