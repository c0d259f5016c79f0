// crashsym's own Itanium demangler (SymDemangle/ItaniumParser*.swift) on a file of names, one per
// line: demangles each once and prints the CPU seconds the loop took, as libiberty_timer.c does
// for GNU libiberty. itanium_bench.py compiles it with the demangler's sources (swiftc -O) as
// main.swift.
#if canImport(Glibc)
import Glibc
#endif
var names: [[UInt8]] = []
let file = fopen(CommandLine.arguments[1], "r")!
var line: UnsafeMutablePointer<CChar>? = nil
var capacity = 0
while true {
    let n = getline(&line, &capacity, file)
    if n <= 0 { break }
    var bytes = Array(UnsafeRawBufferPointer(start: line, count: n))
    if bytes.last == 10 { bytes.removeLast() }
    names.append(bytes)
}
var start = timespec(), end = timespec()
clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start)
var demangled = 0, bytes = 0
for name in names {
    if let r = name.withUnsafeBufferPointer({ ItaniumParser.demangle($0) }) { demangled += 1; bytes += r.count }
}
clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end)
let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
print("{\"names\": \(names.count), \"demangled\": \(demangled), \"bytes\": \(bytes), \"seconds\": \(seconds)}")
