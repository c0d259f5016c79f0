/* Line tables only (clang -gline-tables-only): no DW_TAG_subprogram for these functions, so the
 * symbol table names them and the line program gives file:line (see build.sh). */
#include <stdio.h>

__attribute__((noinline)) int square(int x) {
    return x * x;
}

#ifdef DECOY
__attribute__((noinline)) int decoy(int x) { return x + 7; }
#endif

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", square(argc));
    return 0;
}
