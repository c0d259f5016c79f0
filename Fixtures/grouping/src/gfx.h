/* A small "third-party" library the fixture app ships with: both gfx bugs crash inside gfx_copy. */
#ifndef GFX_H
#define GFX_H
#include <stddef.h>
size_t gfx_copy(char *dst, const char *src, size_t n);
#endif
