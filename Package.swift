// swift-tools-version:6.0
import PackageDescription

// Layers (lower never imports higher), see ../shared/DESIGN.md:
//   C shims -> SymBytes -> SymELF, SymTable -> SymDWARF -> SymDemangle -> Symbolication -> crashsym
let package = Package(
    name: "crashsym",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "crashsym", targets: ["crashsym"]),
        .library(name: "Symbolication", targets: ["Symbolication"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // System-library shims: a module map and one header each.
        .systemLibrary(name: "CDwarf", path: "Sources/CDwarf"),
        .systemLibrary(name: "CElf", path: "Sources/CElf", pkgConfig: "libelf"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib"),
        .systemLibrary(name: "CZstd", path: "Sources/CZstd", pkgConfig: "libzstd"),
        .systemLibrary(name: "CDemangle", path: "Sources/CDemangle"),

        // Format core: no Foundation, no NIO.
        .target(name: "SymBytes"),
        .target(name: "SymELF", dependencies: ["SymBytes", "CZlib", "CZstd"]),
        .target(name: "SymTable", dependencies: ["SymBytes"]),
        .target(name: "SymDWARF", dependencies: ["SymBytes", "SymELF", "SymTable", "CDwarf"]),
        .target(name: "SymDemangle", dependencies: ["CDemangle"]),
        .target(
            name: "Symbolication",
            dependencies: ["SymBytes", "SymELF", "SymDWARF", "SymTable", "SymDemangle"]
        ),
        .executableTarget(
            name: "crashsym",
            dependencies: [
                "Symbolication",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(name: "SymELFTests", dependencies: ["SymELF", "CElf"]),
        .testTarget(name: "SymTableTests", dependencies: ["SymTable", "SymBytes"]),
        .testTarget(name: "SymDWARFTests", dependencies: ["SymDWARF", "SymELF", "SymTable"]),
        .testTarget(name: "SymDemangleTests", dependencies: ["SymDemangle"]),
        .testTarget(name: "SymbolicationTests", dependencies: ["Symbolication", "SymTable", "SymELF"]),
        .testTarget(name: "CrashsymTests", dependencies: ["crashsym"]),
    ],
    swiftLanguageModes: [.v6]
)
