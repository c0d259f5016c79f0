// Swift program whose symbols exercise the Swift mangling (see generate.sh).
public protocol Shape {
    associatedtype Unit
    func area() -> Double
    func describe(in unit: Unit) -> String
}

public struct Square: Shape, Hashable {
    public var side: Double
    public func area() -> Double { side * side }
    public func describe(in unit: String) -> String { "\(area()) \(unit)²" }
}

public enum Token<Payload> {
    case word(String)
    case number(Int)
    case custom(Payload)
    indirect case pair(Token, Token)
}

public final class Cache<Key: Hashable, Value> {
    private var storage: [Key: Value] = [:]
    public init() {}
    public subscript(key: Key) -> Value? {
        get { storage[key] }
        set { storage[key] = newValue }
    }
    @inline(never)
    public func values<R>(mapped transform: (Value) throws -> R) rethrows -> [R] {
        try storage.values.map(transform)
    }
}

public actor Counter {
    private var count = 0
    public func increment(by step: Int = 1) -> Int {
        count += step
        return count
    }
}

extension Array where Element: Numeric {
    @inline(never)
    public func total() -> Element { reduce(0, +) }
}

public struct Ünïcödé {
    public var café: Int
    @inline(never)
    public func grüße() -> Int { café + 1 }
}

@inline(never)
public func describeAll<S: Shape>(_ shapes: [S], unit: S.Unit) -> [String] where S.Unit: CustomStringConvertible {
    shapes.map { $0.describe(in: unit) }
}

@inline(never)
public func compose<A, B, C>(_ f: @escaping (A) -> B, _ g: @escaping (B) -> C) -> (A) -> C {
    { g(f($0)) }
}

@inline(never)
public func count(_ token: Token<Int>) -> Int {
    switch token {
    case .word(let s): return s.count
    case .number(let n): return n
    case .custom(let p): return p
    case .pair(let l, let r): return count(l) + count(r)
    }
}

@main
struct Main {
    static func main() async {
        let squares = [Square(side: 2), Square(side: 3)]
        let cache = Cache<String, Int>()
        cache["a"] = 1
        cache["b"] = 2
        let counter = Counter()
        let step = await counter.increment(by: 2)
        let f = compose({ (x: Int) in x * 2 }, { (y: Int) in "\(y)" })
        let token: Token<Int> = .pair(.word("hello"), .pair(.number(3), .custom(4)))
        let u = Ünïcödé(café: step)
        let described = describeAll(squares, unit: "m")
        let doubled = cache.values { $0 * 2 }
        print(described, doubled.total(), f(21), count(token), u.grüße(), [1.5, 2.5].total())
    }
}
