// Swift: a force-unwrap of nil two calls deep (the runtime traps with ud2: SIGILL).
@inline(never)
func lookup(_ table: [String: Int], _ key: String) -> Int {
    table[key]!
}

@inline(never)
func describe(_ count: Int) -> Int {
    let table = ["one": 1, "two": 2]
    return lookup(table, count > 5 ? "one" : "three") + 1
}

print(describe(CommandLine.arguments.count))
