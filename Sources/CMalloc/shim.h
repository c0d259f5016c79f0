// glibc's malloc tuning (mallopt, malloc_trim): <malloc.h> is in no Swift module.
#include <malloc.h>
