import Crypto
import Foundation
import SymBytes

/// App keys: 32 random bytes shown once as `csk_<64 hex>`, stored only as their SHA-256.
///
/// A plain hash (no salt, no slow KDF) is enough because the key is 256 bits of randomness, not a
/// password: there is nothing to guess. Comparison is constant-time, and an unknown app is
/// compared against a fixed hash so it costs the same as a wrong key.
public enum AppKey {
    /// The prefix of every key, so a leaked key is recognisable in logs and by secret scanners.
    public static let prefix = "csk_"

    /// A new random key.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + hexString(bytes)
    }

    /// The stored form of `key`.
    public static func hash(_ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(key.utf8)))
    }

    /// Whether `key` hashes to `stored`, in time independent of where they differ; `stored` nil
    /// (unknown app) compares against a dummy and fails the same way.
    public static func matches(_ key: String, stored: [UInt8]?) -> Bool {
        let expected = stored ?? dummyHash
        let actual = hash(key)
        var difference: UInt8 = expected.count == actual.count ? 0 : 1
        for index in 0..<actual.count {
            difference |= actual[index] ^ (index < expected.count ? expected[index] : 0)
        }
        return difference == 0 && stored != nil
    }

    private static let dummyHash = [UInt8](repeating: 0xA5, count: 32)
}
