// Swift fixture, second file: a protocol with generic algorithms over it, a struct, a final
// class, an enum with associated values, and always-inline helpers that form an inline chain
// in -O builds (totalArea -> area -> square).

protocol Shape {
    var name: String { get }
    func area() -> Double
}

@inline(__always)
func square(_ value: Double) -> Double {
    value * value
}

struct Circle: Shape {
    var radius: Double
    var name: String { "circle" }
    @inline(__always)
    func area() -> Double { 3.141592653589793 * square(radius) }
}

final class Rectangle: Shape {
    let width: Double
    let height: Double
    init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }
    var name: String { "rectangle" }
    func area() -> Double { width * height }
}

enum Figure {
    case circle(Circle)
    case rectangle(Rectangle)

    var shape: any Shape {
        switch self {
        case .circle(let circle): return circle
        case .rectangle(let rectangle): return rectangle
        }
    }
}

func totalArea<S: Shape>(of shapes: [S], where keep: (S) -> Bool) -> Double {
    var total = 0.0
    for shape in shapes where keep(shape) {
        total += shape.area()
    }
    return total
}
