// The demangler child: after fork() only this file's code runs in it (no Swift runtime call
// other than the demangler itself, through a function pointer), so a multi-threaded parent may
// fork it. See include/CSwiftDemangleChild.h.
#define _GNU_SOURCE
#include "CSwiftDemangleChild.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/// Reads exactly `count` bytes; 0 at end of input or on an error.
static int read_all(int fd, void *buffer, size_t count) {
    char *at = buffer;
    while (count > 0) {
        ssize_t got = read(fd, at, count);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        at += got;
        count -= (size_t)got;
    }
    return 1;
}

/// Writes exactly `count` bytes (no SIGPIPE); 0 on an error.
static int send_all(int fd, const void *buffer, size_t count) {
    const char *at = buffer;
    while (count > 0) {
        ssize_t sent = send(fd, at, count, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) return 0;
        at += sent;
        count -= (size_t)sent;
    }
    return 1;
}

/// The address space of the calling process in bytes (`/proc/self/statm`), or 0 if unknown.
static uint64_t address_space_size(void) {
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[64];
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got <= 0) return 0;
    text[got] = 0;
    return (uint64_t)strtoull(text, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/// Arms (or, with 0, disarms) the per-name CPU timer.
static void set_cpu_timer(uint32_t milliseconds) {
    struct itimerval timer;
    memset(&timer, 0, sizeof timer);
    timer.it_value.tv_sec = milliseconds / 1000;
    timer.it_value.tv_usec = (suseconds_t)(milliseconds % 1000) * 1000;
    setitimer(ITIMER_PROF, &timer, NULL);
}

/// The child's life: limits, then one answer per request until the socket closes.
static void serve(int fd, crashsym_full_demangler full, crashsym_simplified_demangler simplified,
                  crashsym_demangle_child_limits limits, uint64_t address_space) {
    // Only the socket stays open: a copy of the parent's other descriptors (a pipe to a process
    // it started, its standard output) would keep their readers from seeing them close. The
    // child ends when the parent closes its end or exits (not by PR_SET_PDEATHSIG, which follows
    // the forking thread, not the process). The runtime reports a failed assertion on standard
    // error: not into the parent's output.
    fd = fcntl(fd, F_DUPFD, 10);  // clear of 0-3, which are overwritten next
    int null = open("/dev/null", O_RDWR);
    if (fd < 0 || null < 0) _exit(2);
    for (int standard = 0; standard < 3; standard++) dup2(null, standard);
    if (dup2(fd, 3) < 0) _exit(2);
    fd = 3;
    if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
        long open_max = sysconf(_SC_OPEN_MAX);
        for (long other = 4; other < (open_max > 0 ? open_max : 1024); other++) close((int)other);
    }
    // No core file; the default action for the signals that end a runaway (the parent's
    // handlers, e.g. the Swift backtracer's, are not for this process).
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    if (address_space != 0) {
        struct rlimit space = {address_space + limits.address_space_growth, address_space + limits.address_space_growth};
        setrlimit(RLIMIT_AS, &space);
    }
    int defaults[] = {SIGPROF, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU, SIGTRAP};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) signal(defaults[i], SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    char *name = malloc((size_t)limits.maximum_name_length + 1);
    if (!name) _exit(2);
    for (;;) {
        unsigned char header[CRASHSYM_REQUEST_HEADER_SIZE];
        if (!read_all(fd, header, sizeof header)) _exit(0);
        uint32_t length = (uint32_t)header[1] | (uint32_t)header[2] << 8 | (uint32_t)header[3] << 16
                          | (uint32_t)header[4] << 24;
        if (length > limits.maximum_name_length || !read_all(fd, name, length)) _exit(1);
        name[length] = 0;
        set_cpu_timer(limits.cpu_milliseconds_per_name);
        char *result = header[0] == 0 ? full(name, length, NULL, NULL, 0) : simplified(name, length, NULL, NULL);
        set_cpu_timer(0);
        size_t size = result ? strlen(result) : 0;
        unsigned char status = !result ? CRASHSYM_ANSWER_NOT_DEMANGLED
                               : size > limits.maximum_answer_length ? CRASHSYM_ANSWER_TOO_LONG
                                                                     : CRASHSYM_ANSWER_DEMANGLED;
        uint32_t sent = status == CRASHSYM_ANSWER_DEMANGLED ? (uint32_t)size : 0;
        unsigned char answer[CRASHSYM_ANSWER_HEADER_SIZE] = {status, (unsigned char)sent, (unsigned char)(sent >> 8),
                                                             (unsigned char)(sent >> 16), (unsigned char)(sent >> 24)};
        int ok = send_all(fd, answer, sizeof answer) && (sent == 0 || send_all(fd, result, sent));
        free(result);
        if (!ok) _exit(0);
    }
}

int crashsym_demangle_child_start(crashsym_full_demangler full, crashsym_simplified_demangler simplified,
                                  crashsym_demangle_child_limits limits, pid_t *pid, int *socket_fd) {
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) return errno;
    uint64_t address_space = address_space_size();
    pid_t child = fork();
    if (child < 0) {
        int error = errno;
        close(sockets[0]);
        close(sockets[1]);
        return error;
    }
    if (child == 0) {
        close(sockets[0]);
        serve(sockets[1], full, simplified, limits, address_space);
        _exit(0);
    }
    close(sockets[1]);
    *pid = child;
    *socket_fd = sockets[0];
    return 0;
}
