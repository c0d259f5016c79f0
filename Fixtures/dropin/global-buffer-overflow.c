// A global-buffer-overflow for AddressSanitizer: describing the global makes the runtime send a
// DATA request, answered with the variable's declaration (file:line from DWARF) by llvm-symbolizer.
#include <stdio.h>

int table[4] = {1, 2, 3, 4};

__attribute__((noinline)) int read_at(int index) {
    return table[index];
}

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", read_at(argc + 3));
    return 0;
}
