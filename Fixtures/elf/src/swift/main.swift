// Swift fixture: generics specialised at -O, closures, protocol existentials, a class, an
// enum. `prog crash` traps on a force-unwrapped nil inside a closure called from a generic
// function, so the fixture can also produce Swift runtime backtraces.

let arguments = CommandLine.arguments
let lengths = arguments.dropFirst().map { Double($0.count) }

let circles = lengths.map { Circle(radius: $0) }
let rectangles = lengths.enumerated().map { Rectangle(width: $0.element, height: Double($0.offset + 1)) }
let figures: [Figure] = circles.map { .circle($0) } + rectangles.map { .rectangle($0) }

let threshold = Double(arguments.count)
let big = totalArea(of: circles) { $0.radius > threshold / 4 }
let wide = totalArea(of: rectangles) { $0.width >= $0.height }

var names: [String: Int] = [:]
for figure in figures {
    names[figure.shape.name, default: 0] += 1
}

if arguments.count > 1 && arguments[1] == "crash" {
    let missing: Int? = arguments.count > 100 ? 1 : nil
    let crashed = totalArea(of: circles) { _ in missing! > 0 }
    print(crashed)
}

print(Int(big), Int(wide), names.keys.sorted().joined(separator: ","))
