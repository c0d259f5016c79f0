// A use-after-free for AddressSanitizer: the report has three stacks (the bad read, the free and
// the allocation), with frames inlined at -O1 and caller frames in libc, so the symbolizer
// protocol is exercised on CODE lines across several modules.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct record {
    int id;
    char name[12];
};

__attribute__((noinline)) static struct record *make_record(int id) {
    struct record *r = malloc(sizeof *r);
    r->id = id;
    strcpy(r->name, "fixture");
    return r;
}

static inline void release(struct record *r) {
    free(r);
}

static inline int read_id(const struct record *r) {
    return r->id * 3;
}

__attribute__((noinline)) int process(int id) {
    struct record *r = make_record(id);
    release(r);
    return read_id(r);
}

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", process(argc + 40));
    return 0;
}
