import CDemangle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// C++ names through the C++ runtime's own demangler, so output matches `c++filt`.
enum ItaniumDemangler {
    /// Demangles an Itanium name (`_Z…`, or `__Z…` as Mach-O spells it); `nil` when invalid.
    static func demangle(_ bytes: [UInt8]) -> String? {
        // __cxa_demangle reads a C string: an embedded NUL would silently truncate the name.
        guard !bytes.contains(0) else { return nil }
        // Mach-O adds one underscore to every C-level name; the ABI name starts at `_Z`.
        let name = bytes.starts(with: "__Z".utf8) ? bytes.dropFirst() : bytes[...]
        var cString = Array(name)
        cString.append(0)
        return cString.withUnsafeBufferPointer { buffer -> String? in
            var status: Int32 = 0
            // C++ ABI §3.4 (`abi::__cxa_demangle`): a NULL buffer asks it to malloc the result,
            // which we own and free; status 0 is success, anything else means no result.
            let pointer = buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                __cxa_demangle($0, nil, nil, &status)
            }
            guard let pointer else { return nil }
            defer { free(pointer) }
            guard status == 0 else { return nil }
            return String(cString: pointer)
        }
    }
}
