// C++ whose names need a demangler as current as the toolchain's clang (LLVM 21): C++23 extended
// floating-point types (std::bfloat16_t is `DF16b`, _Float16 `DF16_`), and the C++20/23 names
// GCC 12's __cxa_demangle predates. Compiled by generate.sh with the toolchain's clang++ -std=c++23.
#include <concepts>

#if defined(__clang__)  // g++ 12 has neither __bf16 nor explicit object parameters
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
#endif

// The upper-case `.llvm.<hex>` suffix is not something a single compile produces; it is in
// `cxx-llvm-suffix.txt`, written by hand from ThinLTO's and rustc's spelling.

// C++20/23 productions GNU libiberty 2.40 refuses and LLVM 21 reads; scripts/build-demangle-vectors
// compiles this file with clang++ -std=c++23 and g++ -std=c++20 and records LLVM 21's demangling.
#include <cstddef>
#include <utility>

namespace concepts {
template <class T> concept Small = sizeof(T) <= 8;
template <class T, class U> concept SameAs = std::same_as<T, U>;

// Constrained template parameters (`Tk`) and requires-clauses (`Q`).
template <std::integral T> T twice(T value) { return value + value; }
template <Small T> requires std::is_trivially_copyable_v<T> T copied(T value) { return value; }
template <class T> T trailing(T value) requires Small<T> { return value; }
template <class T> requires requires(T t) { t + t; { t * t } -> std::convertible_to<T>; typename T::value_type; }
T expression(T value) { return value; }
void abbreviated(std::integral auto value) { (void)value; }
template <class... Ts> requires (sizeof...(Ts) > 1) void many(Ts...) {}

struct Wrapped { using value_type = int; int v; Wrapped operator+(Wrapped) const { return *this; }
                 Wrapped operator*(Wrapped) const { return *this; } operator int() const { return v; } };

template <class T> struct Holder {
    template <SameAs<T> U> void take(U) {}
    void constrained() requires Small<T> {}
    // A member-like constrained friend (`F`).
    friend void befriend(Holder) requires Small<T> {}
};

void instantiate() {
    twice(1);
    twice(2L);
    copied(3.0);
    trailing('c');
    expression(Wrapped{1});
    abbreviated(5u);
    many(1, 2.0, 'c');
    Holder<int>{}.take(1);
    Holder<short>{}.constrained();
    befriend(Holder<char>{});
}
}  // namespace concepts

namespace lambdas {
// Lambdas in templates, generic lambdas and lambdas with template parameter lists (`Ty`, `Tn`, `Tt`).
template <class T> auto apply(T value) {
    auto generic = [](auto x) { return x; };
    auto explicitType = []<class U>(U u, T t) { return u + t; };
    auto explicitValue = []<int N>() { return N; };
    auto constrained = []<class U> requires std::integral<U> (U u) { return u; };
    auto pack = []<class... Us>(Us... us) { return sizeof...(us); };
    return generic(value) + explicitType(value, value) + explicitValue.template operator()<3>()
        + constrained(1) + static_cast<T>(pack(1, 2));
}
template <template <class> class C> int templateTemplate() {
    return []<template <class> class D>(D<int>*) { return 1; }.template operator()<C>(nullptr);
}
template <class T> struct One {};
int run() { return apply(1) + static_cast<int>(apply(2.0)) + templateTemplate<One>(); }

// A lambda in a default argument and in a variable template (closure types `Ul…E`).
inline auto stored = [](int x) { return x * 2; };
int callStored() { return stored(4); }
}  // namespace lambdas

namespace placeholders {
// Constrained placeholders in return types (`Dk`, `DK`).
template <class T> std::integral auto counted(T value) { return static_cast<int>(value); }
template <class T> std::integral decltype(auto) exact(T value) { return static_cast<long>(value); }
int use() { return counted(2.5) + static_cast<int>(exact(1)); }
}  // namespace placeholders

namespace bindings {
// A structured binding at namespace scope (`DC`).
struct Pair { int a; long b; };
inline Pair pair{1, 2};
auto &[first, second] = pair;
long sum() { return first + second; }
}  // namespace bindings

namespace nttp {
// Class-type non-type template parameters (template parameter objects, `TA`).
struct Point { int x, y; };
template <Point P> int px() { return P.x; }
int use() { return px<Point{1, 2}>(); }
}  // namespace nttp

#if __cpp_explicit_this_parameter
namespace deducing {
// Explicit object parameters (`NH`) in several shapes.
struct Widget {
    int value;
    int get(this Widget const &self) { return self.value; }
    template <class Self> auto &&forward(this Self &&self) { return std::forward<Self>(self).value; }
    int byValue(this Widget self, int add) { return self.value + add; }
    auto lambda() { return [](this auto const &self, int n) -> int { return n > 0 ? self(n - 1) : 0; }; }
};
int use() {
    Widget w{1};
    Widget const c{2};
    return w.get() + w.forward() + c.forward() + Widget{3}.forward() + w.byValue(4) + w.lambda()(2);
}
}  // namespace deducing
#endif
