// libdwarf 20210528 (Debian 12) has no pkg-config file; headers live in /usr/include/libdwarf/.
#include <libdwarf/libdwarf.h>
#include <libdwarf/dwarf.h>
