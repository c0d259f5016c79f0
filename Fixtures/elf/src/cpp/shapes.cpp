// Out-of-line members of the geometry classes: a second translation unit.
#include "geometry.hpp"

namespace fixture::geometry {

double Polygon::area() const
{
    // Shoelace formula; operator[] and Vec2 accessors inline here at -O2.
    double twice = 0;
    for (std::size_t i = 0; i < size(); ++i) {
        const Vec2<double> &a = (*this)[i];
        const Vec2<double> &b = (*this)[(i + 1) % size()];
        twice += a.x * b.y - b.x * a.y;
    }
    return twice < 0 ? -twice / 2 : twice / 2;
}

Vec2<double> Polygon::centre() const
{
    Vec2<double> sum;
    for (std::size_t i = 0; i < size(); ++i)
        sum = sum + (*this)[i];
    return size() == 0 ? sum : sum * (1.0 / static_cast<double>(size()));
}

} // namespace fixture::geometry
