import CDemangle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Swift names through the Swift runtime's demangler, so output matches the toolchain that built
/// them: `swift_demangle` with `swift-demangle`'s type sugar added (`SwiftTypeSugar`) for the full
/// form, the backtracer's `_swift_backtrace_demangle` for the simplified one.
enum SwiftRuntimeDemangler {
    /// Demangles a Swift name; `nil` when the runtime does not recognise it, or when the name
    /// would make the runtime's demangler crash (see `crashesRuntimeDemangler`).
    static func demangle(_ bytes: [UInt8], style: SwiftNameStyle = .full, bufferSize: Int = stackBufferSize) -> String? {
        var result: String?
        let demangled = bytes.withUnsafeBytes { name in
            withDemangled(name, style: style, bufferSize: bufferSize) { result = String(decoding: $0, as: UTF8.self) }
        }
        return demangled ? result : nil
    }

    /// Demangles the Swift name `name`, calls `body` with the demangled bytes (valid only while it
    /// runs) and returns true: the same answer as `demangle(_:)`, without an array, string or heap
    /// allocation for names of ordinary length that need no sugar. False (and `body` is not
    /// called) when `demangle` says nil.
    static func withDemangled(_ name: UnsafeRawBufferPointer, style: SwiftNameStyle = .full,
                              bufferSize: Int = stackBufferSize, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let source = name.baseAddress, !name.isEmpty else { return false }
        if name[name.count - 1] == UInt8(ascii: "p") && crashesRuntimeDemangler(Array(name)) { return false }
        // `swift_demangle` takes an explicit length, but first checks the prefix with `strlen` on
        // the input (`isSwiftSymbol(const char *)`): the name must end in a NUL, and an embedded
        // NUL would cut it short there (not a name any toolchain writes).
        guard memchr(source, 0, name.count) == nil else { return false }
        // Names whose printed text might run away go to a child process (`SwiftDemanglerChild`).
        guard name.count <= Demangler.maximumSwiftNameLength else {
            DemangleRefusals.record(.nameTooLong)
            return false
        }
        guard SwiftOutputBound.bound(name) <= inProcessOutputBound else {
            switch SwiftDemanglerChild.demangle(name, style: style) {
            case .demangled(let text):
                text.withUnsafeBytes { deliver($0, style, body) }
                return true
            case .notDemangled:
                return false
            case .refused(let reason):
                DemangleRefusals.record(reason)
                return false
            }
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 1 + max(1, bufferSize)) { scratch -> Bool in
            let mangled = scratch.baseAddress!, buffer = mangled + name.count + 1, capacity = max(1, bufferSize)
            UnsafeMutableRawPointer(mangled).copyMemory(from: source, byteCount: name.count)
            mangled[name.count] = 0
            // Into a buffer on the stack first (no malloc and free per name); the runtime says
            // when the name did not fit by raising the size, and a larger name takes the
            // runtime's own malloc'ed string.
            var size = capacity
            guard let result = runtimeDemangle(mangled, name.count, buffer, &size, style) else { return false }
            if size <= capacity {
                deliver(UnsafeRawBufferPointer(start: result, count: strlen(result)), style, body)
                return true
            }
            guard let pointer = runtimeDemangle(mangled, name.count, nil, nil, style) else { return false }
            defer { free(pointer) }
            deliver(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), style, body)
            return true
        }
    }

    /// The runtime entry point for `style`.
    private static func runtimeDemangle(_ mangled: UnsafePointer<CChar>, _ length: Int, _ buffer: UnsafeMutablePointer<CChar>?,
                                        _ size: UnsafeMutablePointer<Int>?, _ style: SwiftNameStyle) -> UnsafeMutablePointer<CChar>? {
        switch style {
        case .full: return swift_demangle(mangled, length, buffer, size, 0)
        case .simplified: return _swift_backtrace_demangle(mangled, length, buffer, size)
        }
    }

    /// Calls `body` with `demangled` as `style` spells it.
    private static func deliver(_ demangled: UnsafeRawBufferPointer, _ style: SwiftNameStyle,
                                _ body: (UnsafeRawBufferPointer) -> Void) {
        guard style == .full, SwiftTypeSugar.mayNeedSugar(demangled) else { return body(demangled) }
        SwiftTypeSugar.sugar(Array(demangled)).withUnsafeBytes(body)
    }

    /// The largest `SwiftOutputBound` of a name demangled in this process; names above it go to
    /// the child. The runtime prints about 7 ns a byte (4 MB in 30 ms), so a name here costs at
    /// most about 7 ms, well under the child's limit per name; 98.3 % of the 533,734 real names
    /// measured are below it (`SwiftOutputBound` reads their operators exactly from the start).
    static let inProcessOutputBound: UInt64 = 1 << 20

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
