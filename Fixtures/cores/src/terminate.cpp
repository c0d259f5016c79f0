// C++: an exception nobody catches, thrown from a noexcept function: std::terminate, then
// abort (SIGABRT raised inside libstdc++ and libc, walked back into the program).
#include <cstdio>
#include <stdexcept>

__attribute__((noinline)) void parse(int value) {
    if (value < 100) throw std::runtime_error("value out of range");
}

__attribute__((noinline)) void check(int value) noexcept { parse(value); }

int main(int argc, char **) {
    check(argc);
    std::puts("unreachable");
    return 0;
}
