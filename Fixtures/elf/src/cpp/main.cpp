// C++ fixture: templates, nested namespaces, an anonymous namespace, lambdas (capturing and
// generic), virtual calls, std::sort with a lambda comparator (deep inline chains through
// libstdc++ headers at -O2). `prog crash` dereferences a null pointer inside a lambda that is
// inlined into a template.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "geometry.hpp"

namespace {

using fixture::geometry::Vec2;

template <typename T>
T clamp_to(T value, T low, T high)
{
    return value < low ? low : (value > high ? high : value);
}

struct Stats {
    int crashes = 0;
    static Stats &shared()
    {
        static Stats instance;
        return instance;
    }
};

} // namespace

namespace fixture::app {

std::vector<geometry::Shape *> makeShapes(int argc, char **argv)
{
    std::vector<geometry::Shape *> shapes;
    for (int i = 1; i < argc; ++i) {
        double size = clamp_to<double>(static_cast<double>(std::strlen(argv[i])), 1.0, 100.0);
        if (i % 2)
            shapes.push_back(new geometry::Circle(Vec2<double>{size, -size}, size));
        else
            shapes.push_back(new geometry::Polygon(std::vector<Vec2<double>>{
                {0, 0}, {size, 0}, {size, size}, {0, size * 2}}));
    }
    return shapes;
}

int run(int argc, char **argv)
{
    auto shapes = makeShapes(argc, argv);
    std::sort(shapes.begin(), shapes.end(),
              [](const auto &a, const auto &b) { return a->area() < b->area(); });

    std::vector<Vec2<int>> points;
    for (int i = 0; i < argc * 8; ++i)
        points.emplace_back(i - argc, i * 3 - 7);

    const int limit = argc * 40;
    int near = algo::sum_if(
        points, [limit](const Vec2<int> &p) { return p.lengthSquared() < limit; },
        [](const Vec2<int> &p) { return p.lengthSquared(); });

    algo::RingBuffer<double, 4> recent;
    for (const auto &shape : shapes)
        recent.push(shape->area() + shape->centre().x);

    if (argc > 1 && std::strcmp(argv[1], "crash") == 0) {
        Stats::shared().crashes++;
        volatile std::uintptr_t address = 0;
        auto deref = [](const Vec2<int> *p) { return p->lengthSquared(); };
        near += algo::sum_if(points, [](const Vec2<int> &) { return true; },
                             [&](const Vec2<int> &) { return deref(reinterpret_cast<const Vec2<int> *>(address)); });
    }

    std::printf("%zu shapes, near=%d, recent=%zu", shapes.size(), near, recent.count());
    for (std::size_t i = 0; i < recent.count(); ++i)
        std::printf(" %.2f", recent.at(i));
    std::printf("\n");
    for (geometry::Shape *shape : shapes)
        delete shape;
    return 0;
}

} // namespace fixture::app

int main(int argc, char **argv)
{
    return fixture::app::run(argc, argv);
}
