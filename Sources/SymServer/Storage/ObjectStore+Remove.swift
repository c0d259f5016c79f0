import Glibc
extension ObjectStore {
    /// Removes an object no row references any more (best effort: an object left behind is
    /// harmless, one removed while referenced is not, so callers decide inside a transaction).
    func remove(sha256: String) {
        _ = unlink(path(sha256: sha256))
    }
}
