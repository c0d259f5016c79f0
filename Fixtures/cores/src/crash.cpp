// C++: a null write inside a function the optimiser inlines into a template method, called
// through a virtual call (built -O0, and -O2 -fomit-frame-pointer where the inlining happens).
#include <cstdio>
#include <vector>

namespace shapes {
struct Shape {
    virtual ~Shape() = default;
    virtual int area(int *out) const = 0;
};

static inline int store(int *out, int value) {  // inlined at -O2
    *out = value;
    return *out + 1;
}

template <typename T> struct Box : Shape {
    T side;
    explicit Box(T s) : side(s) {}
    __attribute__((noinline)) int area(int *out) const override { return store(out, int(side * side)); }
};
}  // namespace shapes

__attribute__((noinline)) int total(const std::vector<shapes::Shape *> &all, int *out) {
    int sum = 0;
    for (auto *shape : all) sum += shape->area(out);
    return sum;
}

int main(int argc, char **) {
    shapes::Box<int> box(argc + 2);
    std::vector<shapes::Shape *> all{&box};
    std::printf("%d\n", total(all, argc > 5 ? &argc : nullptr));
    return 0;
}
