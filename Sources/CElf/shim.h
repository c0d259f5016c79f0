// libelf is used by the tests as an independent oracle for SymELF's parser.
#include <gelf.h>
#include <libelf.h>
