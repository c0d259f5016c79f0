/// Reading the manifest of a bundle on disk (`crashsym upload --bundle`), without inflating its files.
extension BundleManifest {
    /// The checked manifest of the bundle zip at `path`, read within the validator's limits.
    public static func read(bundleAt path: String, limits: BundleLimits = BundleLimits()) throws(BundleValidationError) -> BundleManifest {
        var reader = try BundleReader(path: path, limits: limits)
        guard let entry = try reader.list().first(where: { $0.path == entryName }) else {
            throw BundleValidationError(.missingEntry, "the bundle has no manifest", entry: entryName)
        }
        return try BundleValidator.decodeManifest(reader.readSmall(entry, cap: limits.maxManifestBytes))
    }
}
