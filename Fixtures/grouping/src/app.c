/* Grouping fixture, version 1: five bugs, chosen by argv[1]. See Fixtures/grouping/README.md. */
#include <assert.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gfx.h"

volatile long sink;

struct header { char *name; int size; };
struct config { char *buffer; int length; };
struct order { int quantity; int price; };
struct item { struct item *next; int value; };
struct session { int id; char name[12]; };

#ifndef NO_HANDLER
/* The app's crash handler: prints glibc's backtrace of the signal, as many programs do. */
static void on_fatal_signal(int sig) {
    void *pcs[64];
    int n = backtrace(pcs, 64);
    backtrace_symbols_fd(pcs, n, 2);
    _exit(128 + sig);
}
#endif

/* Bug 1: the header's name is NULL and gfx_copy reads it. */
__attribute__((noinline)) int parse_header(struct header *h) {
    char name[32];
    size_t n = gfx_copy(name, h->name, sizeof name);
    sink = n;
    return (int)n + h->size;
}

/* Bug 2: the config buffer was never allocated and gfx_copy writes to it. */
__attribute__((noinline)) int load_config(struct config *c) {
    size_t n = gfx_copy(c->buffer, "value=1", 8);
    sink = n;
    return (int)n + c->length;
}

/* Bug 3: an order with no quantity reaches the invariant check. */
__attribute__((noinline)) int validate_order(struct order *o) {
    assert(o->quantity > 0);
    sink = o->price;
    return o->quantity * o->price;
}

/* Bug 4: the list ends early; count_items (inlined into summarize when optimised) walks off it. */
static int count_items(struct item *list, int expected) {
    int count = 0;
    for (int i = 0; i < expected; i++) {
        count += list->value;
        list = list->next;
    }
    return count;
}

__attribute__((noinline)) int summarize(struct item *list) {
    int total = count_items(list, 3);
    sink = total;
    return total + 1;
}

/* Bug 5: a session is used after release (an ASan report in the sanitizer builds). */
__attribute__((noinline)) int touch_session(struct session *s) {
    sink = s->name[0];
    return s->id + (int)sink;
}

__attribute__((noinline)) struct session *open_session(void) {
    struct session *s = malloc(sizeof *s);
    s->id = 7;
    strcpy(s->name, "guest");
    return s;
}

__attribute__((noinline)) int run_command(const char *mode) {
    int result = 0;
    if (strcmp(mode, "header") == 0) {
        struct header h = { NULL, 4 };
        result = parse_header(&h);
    } else if (strcmp(mode, "config") == 0) {
        struct config c = { NULL, 8 };
        result = load_config(&c);
    } else if (strcmp(mode, "assert") == 0) {
        struct order o = { 0, 250 };
        result = validate_order(&o);
    } else if (strcmp(mode, "null") == 0) {
        struct item last = { NULL, 2 };
        struct item first = { &last, 1 };
        result = summarize(&first);
    } else if (strcmp(mode, "uaf") == 0) {
        struct session *s = open_session();
        free(s);
        result = touch_session(s);
    }
    printf("%d\n", result);
    return result;
}

int main(int argc, char **argv) {
#ifndef NO_HANDLER
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_fatal_signal;
    sigaction(SIGSEGV, &action, NULL);
    sigaction(SIGABRT, &action, NULL);
#endif
    if (argc < 2) {
        fprintf(stderr, "usage: %s header|config|assert|null|uaf\n", argv[0]);
        return 2;
    }
    int result = run_command(argv[1]);
    return result == 0 ? 0 : 1;
}
