#include "gfx.h"

/* Copies up to n bytes, stopping after a NUL; returns the count. A NULL dst or src faults here. */
size_t gfx_copy(char *dst, const char *src, size_t n) {
    size_t i = 0;
    for (; i < n; i++) {
        dst[i] = src[i];
        if (src[i] == 0) break;
    }
    return i;
}
