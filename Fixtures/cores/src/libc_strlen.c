// A crash inside libc's assembly (strlen on a bad pointer): the first frame has CFI but no
// frame pointer of its own.
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) size_t measure(const char *text) { return strlen(text) + 1; }

int main(int argc, char **argv) {
    (void)argv;
    const char *bad = (const char *)(argc > 5 ? "x" : (const char *)16);
    printf("%zu\n", measure(bad));
    return 0;
}
