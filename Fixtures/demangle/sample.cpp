// C++ program whose symbols exercise the Itanium mangling, including GCC clone suffixes
// (.isra, .part, .constprop, .cold) at -O2 (see generate.sh).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace geometry {
template <typename T, int N>
struct Vec {
    T data[N];
    T dot(const Vec &other) const {
        T sum{};
        for (int i = 0; i < N; ++i) sum += data[i] * other.data[i];
        return sum;
    }
    Vec operator+(const Vec &other) const {
        Vec out{};
        for (int i = 0; i < N; ++i) out.data[i] = data[i] + other.data[i];
        return out;
    }
    bool operator==(const Vec &other) const { return std::equal(data, data + N, other.data); }
};

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual const char *name() const { return "shape"; }
};

class Named {
public:
    virtual ~Named() = default;
    virtual std::string label() const = 0;
};

class Circle final : public Shape, public Named {
public:
    explicit Circle(double r) : radius_(r) {}
    double area() const override { return 3.14159 * radius_ * radius_; }
    const char *name() const override { return "circle"; }
    std::string label() const override { return std::string("circle ") + std::to_string(radius_); }

private:
    double radius_;
};
}  // namespace geometry

namespace {
__attribute__((noinline)) int hidden_helper(int x) { return x * 7 + 1; }
}  // namespace

struct Registry {
    static Registry &shared() {
        static Registry instance;
        return instance;
    }
    std::map<std::string, std::function<int(int)>> handlers;
    void add(const std::string &key, std::function<int(int)> fn) { handlers.emplace(key, std::move(fn)); }
    int call(const std::string &key, int value) const {
        auto it = handlers.find(key);
        if (it == handlers.end()) throw std::out_of_range("no handler: " + key);
        return it->second(value);
    }
};

template <typename... Args>
__attribute__((noinline)) std::size_t count_args(Args &&...) {
    return sizeof...(Args);
}

template <typename F>
__attribute__((noinline)) auto apply_twice(F f, int x) -> decltype(f(x)) {
    return f(f(x));
}

struct Big {
    long values[16];
    int tag;
};

// Large struct passed by value and an error path: GCC's IPA-SRA (.isra), partial inlining (.part),
// constant propagation (.constprop) and hot/cold splitting (.cold) clone these at -O2.
__attribute__((noinline)) static long sum_big(Big big, int scale) {
    if (__builtin_expect(big.tag < 0, 0)) {
        std::fprintf(stderr, "negative tag %d\n", big.tag);
        std::abort();
    }
    long total = 0;
    for (long v : big.values) total += v * scale;
    return total;
}

__attribute__((noinline)) static int checked_div(int a, int b, const char *what) {
    if (b == 0) {
        std::fprintf(stderr, "division by zero in %s\n", what);
        throw std::runtime_error(what);
    }
    return a / b;
}

static int maybe_log(int level, const char *message) {
    if (level > 3) {
        std::puts(message);
        std::puts("more work to stop inlining");
        for (int i = 0; i < level; ++i) std::puts(message);
        return level * 2;
    }
    return 0;
}

int operator""_kb(unsigned long long v) { return static_cast<int>(v * 1024); }

int main(int argc, char **argv) {
    geometry::Vec<float, 3> a{{1, 2, 3}}, b{{4, 5, 6}};
    geometry::Vec<long, 2> c{{1, 2}}, d{{3, 4}};
    std::vector<std::unique_ptr<geometry::Shape>> shapes;
    shapes.push_back(std::make_unique<geometry::Circle>(argc));
    double total = a.dot(b) + (c + d).dot(c) + (a == b);
    for (const auto &s : shapes) total += s->area() + std::string(s->name()).size();
    geometry::Circle circle(2.0);
    geometry::Named &named = circle;
    total += named.label().size();
    Registry::shared().add("double", [](int x) { return x * 2; });
    Registry::shared().add("hidden", hidden_helper);
    total += Registry::shared().call("double", 21) + Registry::shared().call("hidden", 1);
    total += count_args(1, 2.0, "three", std::string("four"));
    total += apply_twice([argc](int x) { return x + argc; }, 5);
    Big big{};
    big.tag = argc;
    for (int i = 0; i < 16; ++i) big.values[i] = i * argc;
    total += sum_big(big, 3) + sum_big(big, argc);
    total += checked_div(100, argc, "main") + checked_div(argc, 1, "argc");
    total += maybe_log(argc, argv[0]) + maybe_log(5, "fixed") + 4_kb;
    std::sort(shapes.begin(), shapes.end(), [](const auto &l, const auto &r) { return l->area() < r->area(); });
    std::printf("%f\n", total);
    return 0;
}
