// The Swift fixture of the report fixtures (see ../README.md): crashes on a force-unwrapped nil
// three calls deep, so the runtime backtracer writes a report.
@inline(never)
func lookUp(_ key: String, in table: [String: Int]) -> Int {
    table[key]!
}

@inline(never)
func total(_ keys: [String]) -> Int {
    var sum = 0
    for key in keys { sum += lookUp(key, in: ["one": 1, "two": 2]) }
    return sum
}

print(total(CommandLine.arguments.count > 5 ? ["one"] : ["one", "three"]))
