/* GNU libiberty's cplus_demangle_v3 (crashsym's first C++ demangler, the installed c++filt's) on a
 * file of names, one per line, with crashsym's options (parameters and types): demangles each once
 * and prints the CPU seconds the loop took. itanium_bench.py builds it with gcc -O2 -liberty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libiberty/demangle.h>
int main(int argc, char **argv) {
    FILE *file = fopen(argv[1], "r");
    size_t count = 0, capacity = 1024;
    char **names = malloc(capacity * sizeof *names);
    char line[1 << 16];
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = 0;
        if (count == capacity) names = realloc(names, (capacity *= 2) * sizeof *names);
        names[count++] = strdup(line);
    }
    size_t demangled = 0, bytes = 0;
    struct timespec start, end;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    for (size_t i = 0; i < count; i++) {
        char *r = cplus_demangle_v3(names[i], DMGL_PARAMS | DMGL_TYPES);
        if (r) { demangled++; bytes += strlen(r); free(r); }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
    printf("{\"names\": %zu, \"demangled\": %zu, \"bytes\": %zu, \"seconds\": %.6f}\n", count, demangled, bytes,
           (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
    return 0;
}
