import TestSupport
import SymTable

/// A seeded model shaped like compiled C++: contiguous functions, one line sequence per
/// compilation unit with a row every few bytes, inlined calls (up to three deep) from headers,
/// and a sized symbol per function. Used for size comparisons and scale.
enum RealisticModel {
    static func model(functions: Int, seed: UInt64) -> SymbolModel {
        var random = SplitMix64(seed: seed)
        var model = SymbolModel(module: ModuleIdentity(buildID: Array(repeating: 0xAB, count: 20), machine: 62,
                                                       is64Bit: true, name: "librealistic.so"))
        let directory = model.appendString("/build/project/src")
        let headers = (0..<max(4, functions / 50)).map { index in
            model.files.append(SourceFile(directory: directory, name: model.appendString("include/header\(index).h")))
            return UInt32(model.files.count - 1)
        }
        let inlineNames = (0..<max(8, functions / 10)).map {
            model.appendString("_ZN7project6detail\($0 % 97)12inlineHelperILi\($0)EEEvRKNS_5ValueE")
        }
        var address: UInt64 = 0x40_0000
        var sourceFile: UInt32 = 0
        for function in 0..<functions {
            if function % 20 == 0 {
                if function > 0 { model.lines.append(LineRow(address: address, file: 0, line: 0, isEndSequence: true)) }
                model.files.append(SourceFile(directory: directory, name: model.appendString("module\(function / 20).cpp")))
                sourceFile = UInt32(model.files.count - 1)
            }
            let start = address
            let size = random.u64(0x20...0x300)
            let name = model.appendString("_ZN7project6module\(function)8functionEPKcm")
            model.ranges.append(AddressRange(start: start, end: start + size))
            let physical = UInt32(model.scopes.count)
            model.scopes.append(Scope(name: name, firstRange: UInt32(model.ranges.count - 1), rangeCount: 1))
            model.symbols.append(SymbolEntry(name: name, address: start, size: size))

            var line = UInt32(random.int(10...2000))
            var at = start
            while at < start + size {
                model.lines.append(LineRow(address: at, file: sourceFile, line: line, column: UInt32(random.int(1...60))))
                line += UInt32(random.int(0...3))
                at += random.u64(1...12)
            }
            // Inlined calls nested up to three deep, each a slice of its parent with header rows.
            var parent = physical
            var slice = (start: start, end: start + size)
            for _ in 0..<(random.chance(40) ? random.int(1...3) : 0) {
                let length = slice.end - slice.start
                guard length >= 8 else { break }
                let callStart = slice.start + random.u64(0...length / 2)
                let callEnd = min(slice.end, callStart + random.u64(4...max(4, length / 2)))
                model.ranges.append(AddressRange(start: callStart, end: callEnd))
                model.scopes.append(Scope(
                    name: inlineNames[random.int(0...inlineNames.count - 1)], parent: parent,
                    firstRange: UInt32(model.ranges.count - 1), rangeCount: 1,
                    callFile: sourceFile, callLine: line, callColumn: UInt32(random.int(1...60))))
                parent = UInt32(model.scopes.count - 1)
                slice = (callStart, callEnd)
            }
            address += size + random.u64(0...16)
        }
        model.lines.append(LineRow(address: address, file: 0, line: 0, isEndSequence: true))
        // Header rows inside inlined ranges: rewrite rows under each inlined scope to its header.
        var scopeByAddress: [(start: UInt64, end: UInt64, header: UInt32)] = []
        for scope in model.scopes where scope.isInlined {
            let range = model.ranges[Int(scope.firstRange)]
            scopeByAddress.append((range.start, range.end, headers[Int(scope.name) % headers.count]))
        }
        var cursor = 0
        for index in model.lines.indices where !model.lines[index].isEndSequence {
            while cursor < scopeByAddress.count, scopeByAddress[cursor].end <= model.lines[index].address { cursor += 1 }
            if cursor < scopeByAddress.count, scopeByAddress[cursor].start <= model.lines[index].address {
                model.lines[index].file = scopeByAddress[cursor].header
                model.lines[index].line = UInt32(random.int(1...300))
            }
        }
        return model
    }
}
