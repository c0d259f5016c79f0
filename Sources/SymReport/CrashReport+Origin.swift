/// Which program crashed and which version of it, as far as the report itself says: what the
/// agent routes a report by (its app, its version) and what the server files it under.
extension CrashReport {
    /// The version the report states (`version`, else `app_version` in its metadata), cut at 128
    /// characters as the crash service stores it.
    public var statedVersion: String? {
        (metadata("version") ?? metadata("app_version")).map { String($0.prefix(128)) }
    }

    /// The crashed program's own module: the module named as the report's process (its file name,
    /// or the 15 bytes of it a kernel `comm` keeps), else the first module that is neither a
    /// shared object (`*.so`, `*.so.N`) nor a kernel mapping (`[vdso]`, `linux-vdso.so.1`). Reports
    /// list the executable first (core and Swift images by address) or name it in their frames
    /// beside libraries (sanitizer, glibc); nil when every module is a library.
    public var executableModule: ReportModule? {
        if let process = metadata("process").map(ReportModule.fileName(of:)), !process.isEmpty,
           let named = modules.first(where: { $0.name == process || (process.utf8.count == 15 && $0.name.hasPrefix(process)) }),
           !Self.isLibraryOrMapping(named.name) {
            return named
        }
        return modules.first { !Self.isLibraryOrMapping($0.name) && !$0.path.contains(".apk!") }
    }

    /// Whether a module's file name is a shared object's or a kernel mapping's.
    static func isLibraryOrMapping(_ name: String) -> Bool {
        name.isEmpty || name == "?" || name.hasPrefix("[") || name.hasPrefix("linux-vdso") || name.hasPrefix("linux-gate")
            || name.hasSuffix(".so") || name.contains(".so.")
    }
}
