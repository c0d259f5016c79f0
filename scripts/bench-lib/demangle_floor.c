/* The Swift runtime demangler's own cost: demangles each name of a file (one per line) once with
 * swift_demangle, the call crashsym makes, into a stack buffer, and prints the CPU seconds the
 * loop took. scripts/bench uses it to show the floor under crashsym's Swift lookups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *swift_demangle(const char *mangled, size_t length, char *buffer, size_t *size, unsigned flags);

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s NAMES\n", argv[0]); return 2; }
    FILE *file = fopen(argv[1], "r");
    if (!file) { perror(argv[1]); return 1; }
    size_t count = 0, capacity = 1024;
    char **names = malloc(capacity * sizeof *names);
    char line[1 << 16];
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\n")] = 0;
        if (count == capacity) names = realloc(names, (capacity *= 2) * sizeof *names);
        names[count++] = strdup(line);
    }
    fclose(file);
    char buffer[1 << 16];
    size_t demangled = 0;
    struct timespec start, end;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    for (size_t i = 0; i < count; i++) {
        size_t size = sizeof buffer;
        if (swift_demangle(names[i], strlen(names[i]), buffer, &size, 0)) demangled++;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
    printf("{\"names\": %zu, \"demangled\": %zu, \"seconds\": %.6f}\n", count, demangled,
           (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
    return 0;
}
