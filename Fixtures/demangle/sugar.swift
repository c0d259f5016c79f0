// Swift signatures full of the standard library's sugared types (see generate.sh): arrays,
// dictionaries and optionals nested in each other, optional function types and compositions (which
// swift-demangle puts in parentheses), implicitly unwrapped optionals, a constrained extension
// of Array (spelled `Swift.Array<A where …>`, never sugared), and the backtracer's short form.
public protocol Named { var name: String { get } }
public protocol Aged { var age: Int { get } }

public struct Matrix {
    public var rows: [[Double]]
    public func at(_ row: Int, _ column: Int) -> Double? { rows[row][column] }
}

public func lookup(_ table: [String: [Int]], key: String?) -> [Int]? { key.flatMap { table[$0] } }
public func callback(_ done: ((Int) -> Void)?, _ values: [Int?]) { values.forEach { done?($0 ?? 0) } }
public func either(_ thing: (any Named & Aged)?) -> String { thing?.name ?? "" }
public func nested(_ deep: [String: [String: Int?]]?) -> Int { deep?.count ?? 0 }
public func unwrapped(_ value: Int!) -> Int { value }
public func tuple(_ pair: (Int, String)?) -> [(Int, String)] { pair.map { [$0] } ?? [] }
public func existential(_ box: (any Named)?) -> Bool { box != nil }
public func metatype(_ type: Int?.Type) -> [Int?.Type] { [type] }

extension Array where Element: Named {
    public func names() -> [String] { map(\.name) }
}
