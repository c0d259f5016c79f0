// A C++20 module interface unit: names attached to a named module are mangled with `W`
// (`_ZW6shapes4areav`), partitions with `WP`. Compiled by scripts/build-demangle-vectors with the
// toolchain's clang++ -std=c++23 --precompile, then -c.
module;
#include <concepts>
export module shapes.geometry;

export namespace shapes {
struct Circle { double radius; };
double area(Circle c) { return 3.14159 * c.radius * c.radius; }
template <std::floating_point T> T scaled(T value, T factor) { return value * factor; }
template double scaled<double>(double, double);
}  // namespace shapes

double perimeter(shapes::Circle c) { return 2 * 3.14159 * c.radius; }
export int counter = 0;
export void bump() { ++counter; }
