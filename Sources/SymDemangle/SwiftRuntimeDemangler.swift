import CDemangle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Swift names through the Swift runtime's demangler, so output matches the toolchain's
/// `swift-demangle --no-sugar` for the runtime this program runs with.
enum SwiftRuntimeDemangler {
    /// Demangles a Swift name; `nil` when the runtime does not recognise it, or when the name
    /// would make the runtime's demangler crash (see `crashesRuntimeDemangler`).
    static func demangle(_ bytes: [UInt8], bufferSize: Int = stackBufferSize) -> String? {
        guard !crashesRuntimeDemangler(bytes), !bytes.isEmpty else { return nil }
        // `swift_demangle` takes an explicit length, but first checks the prefix with `strlen` on
        // the input (`isSwiftSymbol(const char *)`): the name must end in a NUL, or it reads on.
        // An embedded NUL would cut the name short there: not a name any toolchain writes.
        guard !bytes.contains(0) else { return nil }
        var name = bytes
        name.append(0)
        return name.withUnsafeBufferPointer { input -> String? in
            input.baseAddress!.withMemoryRebound(to: CChar.self, capacity: input.count) { mangled -> String? in
                // Into a buffer on the stack first (no malloc, strdup and free per name); the
                // runtime says when the name did not fit by raising the size, and a larger name
                // takes the runtime's own malloc'ed string.
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(1, bufferSize)) { buffer -> String? in
                    var size = buffer.count
                    guard let result = swift_demangle(mangled, input.count - 1, buffer.baseAddress, &size, 0) else { return nil }
                    if size <= buffer.count { return String(cString: result) }
                    guard let pointer = swift_demangle(mangled, input.count - 1, nil, nil, 0) else { return nil }
                    defer { free(pointer) }
                    return String(cString: pointer)
                }
            }
        }
    }

    /// Demangles the Swift name `name`, calls `body` with the demangled bytes (valid only while it
    /// runs) and returns true: the same answer as `demangle(_:)`, without an array, string or heap
    /// allocation for names of ordinary length. False (and `body` is not called) when `demangle`
    /// says nil.
    static func withDemangled(_ name: UnsafeRawBufferPointer, bufferSize: Int = stackBufferSize,
                              _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let source = name.baseAddress, !name.isEmpty else { return false }
        if name[name.count - 1] == UInt8(ascii: "p") && crashesRuntimeDemangler(Array(name)) { return false }
        // See `demangle(_:)`: the name must end in a NUL, and hold none before it.
        guard memchr(source, 0, name.count) == nil else { return false }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 1 + max(1, bufferSize)) { scratch -> Bool in
            let mangled = scratch.baseAddress!, buffer = mangled + name.count + 1, capacity = max(1, bufferSize)
            UnsafeMutableRawPointer(mangled).copyMemory(from: source, byteCount: name.count)
            mangled[name.count] = 0
            var size = capacity
            guard let result = swift_demangle(mangled, name.count, buffer, &size, 0) else { return false }
            if size <= capacity {
                body(UnsafeRawBufferPointer(start: result, count: strlen(result)))
                return true
            }
            guard let pointer = swift_demangle(mangled, name.count, nil, nil, 0) else { return false }
            defer { free(pointer) }
            body(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
            return true
        }
    }

    /// Bytes of demangled name that fit in the stack buffer (most names are far shorter).
    static let stackBufferSize = 4096

    /// Whether `bytes` hits a bug in the Swift 6.3 runtime demangler: a function signature
    /// specialization (`Tf [q] <pass-id> <param>* _`) whose parameter list ends the name right
    /// after a constant-propagation tag `p` (e.g. `$s4main3fooyyFTf3p`, a truncated name) makes
    /// `demangleFuncSpecParam` allocate without bound and crash the process. The scan follows the
    /// parameter grammar (`Demangler::demangleFuncSpecParam` in swift/lib/Demangling) from every
    /// `Tf`, so it refuses only names that reach that state; a valid name never ends there.
    static func crashesRuntimeDemangler(_ bytes: [UInt8]) -> Bool {
        guard bytes.last == UInt8(ascii: "p") else { return false }
        var start = 0
        while let tf = firstIndex(of: Array("Tf".utf8), in: bytes, from: start) {
            if parameterListEndsAfterConstantTag(bytes, from: tf + 2) { return true }
            start = tf + 1
        }
        return false
    }

    /// Scans `[q] <digit> <param>*` from `index`; true when the input ends right after a `p`.
    private static func parameterListEndsAfterConstantTag(_ bytes: [UInt8], from index: Int) -> Bool {
        var position = index
        func peek(_ offset: Int = 0) -> UInt8? {
            position + offset < bytes.count ? bytes[position + offset] : nil
        }
        func skip(optional flags: String) {
            for flag in flags.utf8 where peek() == flag { position += 1 }
        }
        if peek() == UInt8(ascii: "q") { position += 1 }
        guard let passID = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(passID) else { return false }
        position += 1
        while let tag = peek(), tag != UInt8(ascii: "_") {
            position += 1
            switch tag {
            case UInt8(ascii: "n"), UInt8(ascii: "c"), UInt8(ascii: "x"), UInt8(ascii: "i"), UInt8(ascii: "s"),
                 UInt8(ascii: "r"):
                break
            case UInt8(ascii: "e"): skip(optional: "DGOX")
            case UInt8(ascii: "d"): skip(optional: "GOX")
            case UInt8(ascii: "g"), UInt8(ascii: "o"): skip(optional: "X")
            case UInt8(ascii: "p"):
                guard let kind = peek() else { return true }
                position += 1
                switch kind {
                case UInt8(ascii: "f"), UInt8(ascii: "g"), UInt8(ascii: "k"):
                    break
                case UInt8(ascii: "i"), UInt8(ascii: "d"):
                    while let digit = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) { position += 1 }
                case UInt8(ascii: "s"):
                    position += 1  // the string encoding
                default:
                    return false  // the runtime rejects the name here
                }
            default:
                return false
            }
        }
        return false
    }

    /// The first index at or after `start` where `needle` occurs in `bytes`.
    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        return (start...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
