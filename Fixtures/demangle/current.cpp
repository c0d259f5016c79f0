// C++ whose names need a demangler as current as the toolchain's clang (LLVM 21): C++23 extended
// floating-point types (std::bfloat16_t is `DF16b`, _Float16 `DF16_`), and the C++20/23 names
// GCC 12's __cxa_demangle predates. Compiled by generate.sh with the toolchain's clang++ -std=c++23.
#include <concepts>

namespace fp {
void brain(__bf16) {}
void half(_Float16) {}
template <typename T> struct Box { T value; };
void boxed(Box<__bf16>, Box<_Float16>, __bf16 *) {}
__bf16 twice(__bf16 x, _Float16 y) { return (__bf16)((float)x + (float)y); }
}  // namespace fp

namespace modern {
template <std::integral T> T constrained(T value) { return value; }
template int constrained<int>(int);
struct Self {
    void with(this Self self, int);
    template <class T> void deduced(this T &&self);
};
void Self::with(this Self, int) {}
template <class T> void Self::deduced(this T &&) {}
template void Self::deduced<Self &>(Self &);
}  // namespace modern

// The upper-case `.llvm.<hex>` suffix is not something a single compile produces; it is in
// `cxx-llvm-suffix.txt`, written by hand from ThinLTO's and rustc's spelling.
