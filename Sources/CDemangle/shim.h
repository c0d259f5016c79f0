#include <stddef.h>
#include <stdint.h>

// C++ demangler of GNU libiberty (libiberty-dev, a static archive): the same cp-demangle.c that the
// installed `c++filt` (binutils 2.40) runs, newer than GCC 12's `__cxa_demangle` (C++23 extended
// floating-point types). Declared here rather than by including <libiberty/demangle.h>, whose
// `ansidecl.h` does not build as a Clang module.
char *cplus_demangle_v3(const char *mangled, int options);

// The options `__cxa_demangle` passes (DMGL_PARAMS | DMGL_TYPES in libiberty's demangle.h).
#define CRASHSYM_DMGL_PARAMS (1 << 0)
#define CRASHSYM_DMGL_TYPES (1 << 4)

// Swift runtime demangler exported by libswiftCore, so names match the toolchain that built them.
char *swift_demangle(const char *mangledName, size_t mangledNameLength, char *outputBuffer,
                     size_t *outputBufferSize, uint32_t flags);

// The Swift runtime's demangler for its backtracer (libswiftCore, Swift 5.9 and later): Swift names
// in the short form the backtracer prints (`DemangleOptions::SimplifiedUIDemangleOptions`), other
// names through `__cxa_demangle`. Same buffer contract as `swift_demangle`.
char *_swift_backtrace_demangle(const char *mangledName, size_t mangledNameLength, char *outputBuffer,
                                size_t *outputBufferSize);
