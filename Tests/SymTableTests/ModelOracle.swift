import SymTable

/// A frame as plain values, comparable between the oracle and a table.
struct PlainFrame: Equatable, CustomStringConvertible {
    var function: [UInt8]
    var directory: [UInt8]
    var file: [UInt8]
    var line: UInt32
    var column: UInt32
    var isInlined: Bool
    var isSymbolOnly: Bool
    /// The frame's own scope name (`Frame.scopeFunction`): the DWARF function's where the
    /// covering symbol renames the physical frame; not part of `description`.
    var scopeFunction: [UInt8]

    var description: String {
        let name = String(decoding: function, as: UTF8.self)
        let path = String(decoding: directory, as: UTF8.self) + "|" + String(decoding: file, as: UTF8.self)
        return "\(name) \(path):\(line):\(column)\(isInlined ? " inlined" : "")\(isSymbolOnly ? " symbol-only" : "")"
    }
}

extension SymbolTable {
    /// The frames at `address` as plain values.
    func plainFrames(at address: UInt64) throws -> [PlainFrame] {
        try frames(at: address).map { frame in
            PlainFrame(function: Array(string(frame.function).utf8), directory: Array(string(frame.directory).utf8),
                       file: Array(string(frame.file).utf8), line: frame.line, column: frame.column,
                       isInlined: frame.isInlined, isSymbolOnly: frame.isSymbolOnly,
                       scopeFunction: Array(string(frame.scopeFunction).utf8))
        }
    }
}

/// The lookup rules applied directly to a model by linear scans: the reference the table is
/// checked against. Deliberately naive; see docs/csym-format.md "Lookup semantics".
struct ModelOracle {
    let model: SymbolModel
    /// Symbols after llvm-symbolizer's de-duplication: stably sorted by (address, size), the last
    /// kept per address.
    let kept: [SymbolEntry]

    init(_ model: SymbolModel) {
        self.model = model
        let sorted = model.symbols.enumerated().sorted { lhs, rhs in
            if lhs.element.address != rhs.element.address { return lhs.element.address < rhs.element.address }
            if lhs.element.size != rhs.element.size { return lhs.element.size < rhs.element.size }
            return lhs.offset < rhs.offset
        }.map(\.element)
        var kept: [SymbolEntry] = []
        for symbol in sorted {
            if kept.last?.address == symbol.address { kept.removeLast() }
            kept.append(symbol)
        }
        self.kept = kept
    }

    func depth(_ scope: Int) -> Int {
        var depth = 0
        var current = model.scopes[scope]
        while current.isInlined {
            depth += 1
            current = model.scopes[Int(current.parent)]
        }
        return depth
    }

    /// Rule 1: the deepest scope containing the address; the later one at equal depth.
    func innermostScope(at address: UInt64) -> Int? {
        var best: Int? = nil
        var bestDepth = -1
        for (index, scope) in model.scopes.enumerated()
        where model.ranges[scope.rangeIndices].contains(where: { $0.start <= address && address < $0.end }) {
            if depth(index) >= bestDepth {
                best = index
                bestDepth = depth(index)
            }
        }
        return best
    }

    /// Rule 2: the last row at or below the address in the first sequence whose end is above it.
    func row(at address: UInt64) -> LineRow? {
        var first = 0
        for (index, end) in model.lines.enumerated() where end.isEndSequence {
            let body = model.lines[first..<index]
            first = index + 1
            if address < end.address, let row = body.last(where: { $0.address <= address }) { return row }
        }
        return nil
    }

    /// Rule 4: the last kept symbol at or below the address, if its size reaches the address.
    func symbol(at address: UInt64) -> SymbolEntry? {
        guard let symbol = kept.last(where: { $0.address <= address }) else { return nil }
        return symbol.size == 0 || address - symbol.address < symbol.size ? symbol : nil
    }

    /// Rules 3-5: the frames at `address`, innermost first.
    func frames(at address: UInt64) -> [PlainFrame] {
        let row = row(at: address)
        let symbol = symbol(at: address)
        func frame(name: UInt32, scopeName: UInt32? = nil, file: UInt32, line: UInt32, column: UInt32, inlined: Bool,
                   symbolOnly: Bool) -> PlainFrame {
            let source = model.files[Int(file)]
            return PlainFrame(function: Array(model.strings[Int(name)].utf8),
                              directory: Array(model.strings[Int(source.directory)].utf8),
                              file: Array(model.strings[Int(source.name)].utf8),
                              line: line, column: column, isInlined: inlined, isSymbolOnly: symbolOnly,
                              scopeFunction: Array(model.strings[Int(scopeName ?? name)].utf8))
        }
        guard let innermost = innermostScope(at: address) else {
            guard let symbol else { return [] }
            return [frame(name: symbol.name, file: row?.file ?? 0, line: row?.line ?? 0, column: row?.column ?? 0,
                          inlined: false, symbolOnly: true)]
        }
        var chain = [innermost]
        while model.scopes[chain[chain.count - 1]].isInlined {
            chain.append(Int(model.scopes[chain[chain.count - 1]].parent))
        }
        var frames: [PlainFrame] = []
        for (position, index) in chain.enumerated() {
            let scope = model.scopes[index]
            let name = position == chain.count - 1 ? (symbol?.name ?? scope.name) : scope.name
            if position == 0 {
                frames.append(frame(name: name, scopeName: scope.name, file: row?.file ?? 0, line: row?.line ?? 0,
                                    column: row?.column ?? 0, inlined: scope.isInlined, symbolOnly: false))
            } else {
                let callee = model.scopes[chain[position - 1]]
                frames.append(frame(name: name, scopeName: scope.name, file: callee.callFile, line: callee.callLine,
                                    column: callee.callColumn, inlined: scope.isInlined, symbolOnly: false))
            }
        }
        return frames
    }

    /// Addresses worth probing: every boundary in the model, one below and one above.
    func interestingAddresses() -> [UInt64] {
        var points: [UInt64] = [0, UInt64.max]
        for range in model.ranges { points += [range.start, range.end] }
        for row in model.lines { points.append(row.address) }
        for symbol in model.symbols {
            points.append(symbol.address)
            if symbol.size <= UInt64.max - symbol.address { points.append(symbol.address + symbol.size) }
        }
        var result: [UInt64] = []
        for point in points {
            result.append(point)
            if point > 0 { result.append(point - 1) }
            if point < UInt64.max { result.append(point + 1) }
        }
        return result
    }
}
