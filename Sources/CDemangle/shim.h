#include <stddef.h>
#include <stdint.h>

// C++ ABI demangler from libstdc++ (cxxabi.h declares it in a C++ namespace; this is its C name).
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

// Swift runtime demangler exported by libswiftCore, so names match the toolchain that built them.
char *swift_demangle(const char *mangledName, size_t mangledNameLength, char *outputBuffer,
                     size_t *outputBufferSize, uint32_t flags);
