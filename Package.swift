// swift-tools-version:6.0
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

// Layers (lower never imports higher), see ../shared/DESIGN.md:
//   C shims -> SymBytes -> SymELF, SymTable -> SymDWARF -> SymDemangle -> Symbolication
//   SymReport (crash-report model and parsers) -> Symbolication
//   Symbolication -> SymLookup (the address-batch front ends of `crashsym`: lookup, the drop-ins)
//   SymBundle (zip + manifest) -> SymClient (libcurl), SymServer (Hummingbird, GRDB) -> crashsym
// The symbolication core (everything up to Symbolication and SymReport) has no Foundation, NIO or
// Hummingbird in it, so its tests build in seconds.
// The release link of `crashsym` on Linux (files in scripts/link) uses lld to place the functions
// that its common jobs run side by side (order.txt, made by scripts/gen-link-order), packs the
// relative relocations (DT_RELR) when the C library can read them (glibc 2.36, Debian 12), and
// links libstdc++ statically when its archive is there (see scripts/link/libstdc++.so). A run then
// maps about 3.3 MB less; see "Process floor" in docs/BENCHMARKS.md.
let releaseLink: [LinkerSetting] = {
    let directory = "\(Context.packageDirectory)/scripts/link"
    var flags = [
        "-use-ld=lld",
        "-Xlinker", "--symbol-ordering-file=\(directory)/order.txt",
        "-Xlinker", "--no-warn-symbol-ordering",
    ]
    if glibcReadsPackedRelocations() {
        flags += ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]
    }
    if staticLibstdcxxIsInstalled() {
        flags += ["-L", directory]
    }
    return [.unsafeFlags(flags, .when(platforms: [.linux], configuration: .release))]
}()

func staticLibstdcxxIsInstalled() -> Bool {
    #if canImport(Glibc)
    var found = glob_t()
    defer { globfree(&found) }
    return glob("/usr/lib/gcc/*/*/libstdc++.a", 0, nil, &found) == 0 && found.gl_pathc > 0
    #else
    return false
    #endif
}

func glibcReadsPackedRelocations() -> Bool {
    #if canImport(Glibc)
    var text = [CChar](repeating: 0, count: 64)  // "glibc 2.36"
    guard confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count) > 0,
          let number = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
              .split(separator: " ").last else { return false }
    let version = number.split(separator: ".").compactMap { Int($0) }
    return version.count >= 2 && (version[0], version[1]) >= (2, 36)
    #else
    return false
    #endif
}

let package = Package(
    name: "crashsym",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "crashsym", targets: ["crashsym"]),
        .executable(name: "crashsym-net", targets: ["crashsym-net"]),
        .executable(name: "crashsym-agent", targets: ["crashsym-agent"]),
        .library(name: "Symbolication", targets: ["Symbolication"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        // The web console (Sources/SymServer/Console): bcrypt for people's passwords, Mustache
        // templates. Only SymServer (so only crashsym-net) links them, never the lean `crashsym`.
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", exact: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", exact: "2.1.1"),
        // The shared metadata store (`--database postgres://…`): PostgreSQL's client.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // System-library shims: a module map and one header each.
        .systemLibrary(name: "CDwarf", path: "Sources/CDwarf"),
        .systemLibrary(name: "CElf", path: "Sources/CElf", pkgConfig: "libelf"),
        .systemLibrary(name: "CLibz", path: "Sources/CLibz", pkgConfig: "zlib"),
        .systemLibrary(name: "CZstd", path: "Sources/CZstd", pkgConfig: "libzstd"),
        // xz (liblzma): systemd-coredump's Compress= cores in .xz (the agent only).
        .systemLibrary(name: "CLzma", path: "Sources/CLzma", pkgConfig: "liblzma"),
        .systemLibrary(name: "CDemangle", path: "Sources/CDemangle"),
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(name: "CPrefetch", path: "Sources/CPrefetch"),
        // libcurl is loaded with dlopen by `upload` only (see Sources/CCurl/shim.h), not linked.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl"),
        .systemLibrary(name: "CSyncfs", path: "Sources/CSyncfs"),

        // Format core: no Foundation, no NIO.
        .target(name: "SymBytes"),
        .target(name: "SymELF", dependencies: ["SymBytes", "CLibz", "CZstd"]),
        .target(name: "SymTable", dependencies: ["SymBytes", "CZstd"]),
        .target(name: "SymDWARF", dependencies: ["SymBytes", "SymELF", "SymTable", "CDwarf"]),
        // The child process that demangles Swift names which might run away (plain C after fork).
        .target(name: "CSwiftDemangleChild"),
        .target(name: "SymDemangle", dependencies: ["CDemangle", "CSwiftDemangleChild"]),
        .target(name: "SymReport", dependencies: ["SymBytes"]),
        // Call-frame information and stack walking; minidumps. Pure: they are handed bytes.
        .target(name: "SymUnwind", dependencies: ["SymBytes"]),
        .target(name: "SymCore", dependencies: ["SymBytes", "SymELF", "SymUnwind"]),
        .target(
            name: "Symbolication",
            dependencies: ["SymBytes", "SymELF", "SymDWARF", "SymTable", "SymDemangle", "SymReport", "SymHTTP", "SymUnwind", "SymCore", "CMalloc", "CPrefetch"]
        ),

        // The address-batch front ends only the `crashsym` executable needs: `lookup`'s ordered
        // parallel pipeline, the addr2line and llvm-symbolizer drop-ins, the demangling filter.
        // Kept out of Symbolication so that the server and the agent link the engine alone.
        .target(
            name: "SymLookup",
            dependencies: ["SymBytes", "SymELF", "SymTable", "SymDemangle", "Symbolication"]
        ),

        // Upload pipeline and server.
        .target(
            name: "SymBundle",
            dependencies: [
                "SymBytes", "SymELF", "SymTable",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The libcurl transport (no Foundation): the upload client, the crash client and the
        // symbol sources over HTTP (debuginfod, a crashsym server) of the lean `crashsym`.
        .target(name: "SymHTTP", dependencies: ["CCurl", "SymBytes"]),
        .target(
            name: "SymClient",
            dependencies: ["SymHTTP", "SymBundle", "CLibz", .product(name: "Logging", package: "swift-log")]
        ),
        // The collector daemon (`crashsym agent`): spools, durable queue, forwarding over SymHTTP.
        // Neither SymClient (SymBundle, ZIPFoundation) nor swift-crypto: both link Foundation, about
        // 9 MB of the daemon's resident memory; it uses FoundationEssentials only.
        .target(
            name: "SymAgent",
            dependencies: [
                "SymBytes", "SymReport", "SymCore", "Symbolication", "SymHTTP", "CSyncfs", "CZstd", "CLzma",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The S3 client (libcurl, SigV4 by libcurl; no Foundation, no NIO): the shared object store.
        .target(name: "SymS3", dependencies: ["SymHTTP", "SymBytes"]),
        .target(
            name: "SymServer",
            dependencies: [
                "CSyncfs",
                "SymBytes", "SymBundle", "Symbolication", "SymTable", "SymHTTP", "SymS3", "SymCore", "CLibz",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Command-line pieces shared by the two executables.
        .target(
            name: "CrashsymCommandLine",
            dependencies: ["Symbolication", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // `crashsym`: dump, lookup, symbolicate and the drop-in modes, without the network stack, so
        // one-shot runs start fast; it runs `crashsym-net` (next to it) for upload, serve and apps.
        .executableTarget(
            name: "crashsym",
            dependencies: [
                "SymBytes", "Symbolication", "SymLookup", "SymReport", "CrashsymCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: releaseLink
        ),
        .executableTarget(
            name: "crashsym-net",
            dependencies: [
                "Symbolication", "SymBundle", "SymClient", "SymServer", "CrashsymCommandLine",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // `crashsym agent` (the collector daemon on every app host): its own executable, so that it
        // links neither the server's libraries (SwiftNIO, Hummingbird, GRDB) nor pays for them in
        // resident memory, and the lean `crashsym` stays lean. `crashsym` runs it for `agent`.
        .executableTarget(
            name: "crashsym-agent",
            dependencies: [
                "SymAgent", "CrashsymCommandLine", "Symbolication",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Helpers shared by the test targets (seeded generator).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SymELFTests", dependencies: ["TestSupport", "SymELF", "CElf"]),
        .testTarget(name: "SymTableTests", dependencies: ["TestSupport", "SymTable", "SymBytes"]),
        .testTarget(name: "SymDWARFTests", dependencies: ["TestSupport", "SymDWARF", "SymELF", "SymTable"]),
        .testTarget(name: "SymDemangleTests", dependencies: ["TestSupport", "SymDemangle"]),
        .testTarget(name: "SymReportTests", dependencies: ["TestSupport", "SymReport"]),
        .testTarget(name: "SymUnwindTests", dependencies: ["TestSupport", "SymUnwind", "SymELF", "SymBytes", "Symbolication"]),
        .testTarget(name: "SymCoreTests", dependencies: ["TestSupport", "SymCore", "SymBytes", "SymUnwind", "SymELF", "Symbolication"]),
        .testTarget(name: "SymbolicationTests", dependencies: ["TestSupport", "Symbolication", "SymReport", "SymTable", "SymELF", "SymCore", "SymBytes"]),
        .testTarget(name: "SymLookupTests", dependencies: ["TestSupport", "SymLookup"]),
        .testTarget(name: "SymBundleTests", dependencies: ["TestSupport", "SymBundle", "SymTable"]),
        .testTarget(
            name: "SymServerTests",
            dependencies: [
                "TestSupport", "SymServer", "SymClient", "SymBundle", "SymTable", "SymS3",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "SymClientTests", dependencies: ["TestSupport", "SymClient", "SymBundle"]),
        .testTarget(name: "SymAgentTests", dependencies: ["TestSupport", "SymAgent"]),
        .testTarget(name: "CrashsymTests", dependencies: ["TestSupport", "crashsym", "crashsym-net", "crashsym-agent"]),
    ],
    swiftLanguageModes: [.v6]
)
