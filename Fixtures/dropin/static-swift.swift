// Linked with -static-stdlib: the Swift runtime and standard library come from archives without
// DWARF, so their functions are named from .symtab only, with the archive member (`Swift.o`,
// `Metadata.cpp`) from the STT_FILE symbol before them.
func total(_ values: [Int]) -> Int { values.reduce(0, +) }
print(total([1, 2, 3]))
