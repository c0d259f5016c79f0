// A child process that runs the Swift runtime's demangler on names that might make it run away
// (see Sources/SymDemangle/SwiftDemanglerChild.swift): everything after fork() is the plain C in
// child.c, which calls the demangler only through the function pointers it is given.
#ifndef CRASHSYM_CSWIFTDEMANGLECHILD_H
#define CRASHSYM_CSWIFTDEMANGLECHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// `swift_demangle`'s signature.
typedef char *(*crashsym_full_demangler)(const char *name, size_t length, char *buffer, size_t *size, uint32_t flags);
/// `_swift_backtrace_demangle`'s signature.
typedef char *(*crashsym_simplified_demangler)(const char *name, size_t length, char *buffer, size_t *size);

/// A request: `crashsym_request_header` (style: 0 full, 1 simplified; the name's length,
/// little-endian), then the name's bytes. An answer: `crashsym_answer_header` (status below; the
/// length of what follows), then the demangled bytes when the status is `CRASHSYM_ANSWER_DEMANGLED`.
enum {
    CRASHSYM_REQUEST_HEADER_SIZE = 5,
    CRASHSYM_ANSWER_HEADER_SIZE = 5,
    CRASHSYM_ANSWER_NOT_DEMANGLED = 0,
    CRASHSYM_ANSWER_DEMANGLED = 1,
    CRASHSYM_ANSWER_TOO_LONG = 2,
};

/// The limits the child runs under.
typedef struct {
    /// Longest name the child reads (a longer request ends the child).
    uint32_t maximum_name_length;
    /// Longest answer it sends; a longer one is answered `CRASHSYM_ANSWER_TOO_LONG`.
    uint32_t maximum_answer_length;
    /// CPU time (user + system) one name may take; the child is killed by SIGPROF past it.
    uint32_t cpu_milliseconds_per_name;
    /// Address space the child may grow by beyond the parent's at fork (RLIMIT_AS).
    uint64_t address_space_growth;
} crashsym_demangle_child_limits;

/// Starts a child serving requests on a socket: its process id in `*pid` and the parent's end of
/// the socket (close-on-exec) in `*socket_fd`. Returns 0, or an errno value when the socket or
/// the process could not be made. The child ends when the socket closes, the parent dies, or a
/// limit is passed.
int crashsym_demangle_child_start(crashsym_full_demangler full, crashsym_simplified_demangler simplified,
                                  crashsym_demangle_child_limits limits, pid_t *pid, int *socket_fd);

#endif
