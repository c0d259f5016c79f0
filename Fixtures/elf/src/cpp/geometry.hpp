// Header-only part of the C++ fixture: a class template with inline methods, a class
// hierarchy with virtual functions, and function templates, all inside nested namespaces.
#pragma once

#include <cstddef>
#include <vector>

namespace fixture::geometry {

template <typename T>
struct Vec2 {
    T x{};
    T y{};

    constexpr Vec2() = default;
    constexpr Vec2(T x, T y) : x(x), y(y) {}

    Vec2 operator+(const Vec2 &other) const { return {x + other.x, y + other.y}; }
    Vec2 operator*(T factor) const { return {x * factor, y * factor}; }
    T dot(const Vec2 &other) const { return x * other.x + y * other.y; }
    T lengthSquared() const { return dot(*this); }
};

class Shape {
public:
    explicit Shape(const char *name) : name_(name) {}
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual Vec2<double> centre() const = 0;
    const char *name() const { return name_; }

private:
    const char *name_;
};

class Circle final : public Shape {
public:
    Circle(Vec2<double> centre, double radius) : Shape("circle"), centre_(centre), radius_(radius) {}
    double area() const override { return 3.141592653589793 * radius_ * radius_; }
    Vec2<double> centre() const override { return centre_; }

private:
    Vec2<double> centre_;
    double radius_;
};

class Polygon : public Shape {
public:
    explicit Polygon(std::vector<Vec2<double>> points) : Shape("polygon"), points_(std::move(points)) {}
    double area() const override;
    Vec2<double> centre() const override;
    std::size_t size() const { return points_.size(); }
    const Vec2<double> &operator[](std::size_t index) const { return points_[index]; }

private:
    std::vector<Vec2<double>> points_;
};

} // namespace fixture::geometry

namespace fixture::algo {

// Calls `predicate` and `project` through lambdas: at -O2 this is an inline chain
// sum_if -> lambda -> Vec2::lengthSquared -> Vec2::dot.
template <typename Range, typename Predicate, typename Project>
auto sum_if(const Range &range, Predicate predicate, Project project)
{
    decltype(project(*range.begin())) total{};
    for (const auto &element : range)
        if (predicate(element))
            total += project(element);
    return total;
}

template <typename T, std::size_t N>
class RingBuffer {
public:
    void push(const T &value)
    {
        items_[head_] = value;
        head_ = (head_ + 1) % N;
        if (count_ < N)
            ++count_;
    }
    std::size_t count() const { return count_; }
    const T &at(std::size_t index) const { return items_[(head_ + N - count_ + index) % N]; }

private:
    T items_[N]{};
    std::size_t head_ = 0;
    std::size_t count_ = 0;
};

} // namespace fixture::algo
