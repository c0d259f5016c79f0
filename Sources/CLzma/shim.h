#include <lzma.h>

// LZMA_CONCATENATED is a UINT32_C() macro, which Swift does not import.
static const uint32_t crashsym_lzma_concatenated = LZMA_CONCATENATED;
