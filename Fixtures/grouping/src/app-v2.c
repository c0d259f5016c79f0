/* Grouping fixture, version 2: the same five bugs, with the code around them moved (functions
 * reordered, new code and struct fields before them, parse_header and load_config no longer kept
 * out of line). See Fixtures/grouping/README.md. */
#include <assert.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gfx.h"

volatile long sink;
static long events;

struct header { int version; int flags; char *name; int size; };
struct config { const char *path; char *buffer; int length; };
struct order { int id; int quantity; int price; };
struct item { int weight; struct item *next; int value; };
struct session { int id; int refs; char name[12]; };

/* New in version 2: every command is traced. */
__attribute__((noinline)) static void trace_event(const char *what, long value) {
    events += value;
    if (getenv("GROUPING_TRACE")) fprintf(stderr, "event %s %ld\n", what, value);
}

#ifndef NO_HANDLER
static void on_fatal_signal(int sig) {
    void *pcs[64];
    int n = backtrace(pcs, 64);
    backtrace_symbols_fd(pcs, n, 2);
    _exit(128 + sig);
}
#endif

__attribute__((noinline)) struct session *open_session(void) {
    struct session *s = malloc(sizeof *s);
    trace_event("open", 1);
    s->id = 7;
    s->refs = 1;
    strcpy(s->name, "guest");
    return s;
}

/* Bug 5 */
__attribute__((noinline)) int touch_session(struct session *s) {
    trace_event("touch", s->refs);
    sink = s->name[0];
    return s->id + (int)sink;
}

/* Bug 4 */
static int count_items(struct item *list, int expected) {
    int count = 0;
    trace_event("count", expected);
    for (int i = 0; i < expected; i++) {
        count += list->value * list->weight;
        list = list->next;
    }
    return count;
}

__attribute__((noinline)) int summarize(struct item *list) {
    trace_event("summarize", 0);
    int total = count_items(list, 3);
    sink = total;
    return total + 1;
}

/* Bug 3 */
__attribute__((noinline)) int validate_order(struct order *o) {
    trace_event("validate", o->id);
    if (o->price < 0) return -1;
    assert(o->quantity > 0);
    sink = o->price;
    return o->quantity * o->price;
}

/* Bug 2 */
int load_config(struct config *c) {
    trace_event("config", c->length);
    size_t n = gfx_copy(c->buffer, "value=1", 8);
    sink = n;
    return (int)n + c->length;
}

/* Bug 1 */
int parse_header(struct header *h) {
    char name[32];
    trace_event("header", h->version);
    if (h->flags & 1) return 0;
    size_t n = gfx_copy(name, h->name, sizeof name);
    sink = n;
    return (int)n + h->size;
}

__attribute__((noinline)) int run_command(const char *mode) {
    int result = 0;
    trace_event(mode, 0);
    if (strcmp(mode, "uaf") == 0) {
        struct session *s = open_session();
        free(s);
        result = touch_session(s);
    } else if (strcmp(mode, "null") == 0) {
        struct item last = { 1, NULL, 2 };
        struct item first = { 1, &last, 1 };
        result = summarize(&first);
    } else if (strcmp(mode, "assert") == 0) {
        struct order o = { 12, 0, 250 };
        result = validate_order(&o);
    } else if (strcmp(mode, "config") == 0) {
        struct config c = { "/etc/app.conf", NULL, 8 };
        result = load_config(&c);
    } else if (strcmp(mode, "header") == 0) {
        struct header h = { 2, 0, NULL, 4 };
        result = parse_header(&h);
    }
    printf("%d %ld\n", result, events);
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
