// Named CLibz, not CZlib: ZIPFoundation declares a module CZlib of its own.
#include <zlib.h>
