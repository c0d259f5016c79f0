/* Public interface of libgreet.so, the shared-library fixture. */
#ifndef GREET_H
#define GREET_H

#include <stddef.h>

/* Exported: appears in .dynsym, so even a --strip-all copy keeps its name. */
size_t greet_format(char *buffer, size_t capacity, const char *name, int times);
unsigned greet_checksum(const char *text);
/* Dereferences `slot` through two inlined helpers: a crash inside the library. */
int greet_crash(const int *slot);

#endif
