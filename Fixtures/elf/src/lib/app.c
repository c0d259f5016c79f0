/* greet-app: the executable that links libgreet.so (found next to it through
 * RPATH $ORIGIN). `greet-app crash` crashes inside the library. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "greet.h"

int main(int argc, char **argv)
{
    char buffer[256];
    const char *name = argc > 1 ? argv[1] : "world";
    size_t length = greet_format(buffer, sizeof buffer, name, argc);
    printf("%s (%zu, %08x)\n", buffer, length, greet_checksum(buffer));
    if (argc > 1 && strcmp(argv[1], "crash") == 0) {
        volatile uintptr_t address = 0;
        return greet_crash((const int *)address);
    }
    return 0;
}
