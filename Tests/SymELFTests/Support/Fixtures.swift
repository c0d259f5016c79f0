import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Targets the cross-architecture objects are compiled for, with the architecture name, class
/// and byte order each must have (facts about the target, not outputs of SymELF).
enum CrossTarget: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case x86_64, aarch64, i386, armv7, riscv64, powerpc64, powerpc64le, mips, s390x

    var triple: String {
        switch self {
        case .armv7: "armv7-linux-gnueabihf"
        default: "\(rawValue)-linux-gnu"
        }
    }
    var expectedArchitecture: String {
        switch self {
        case .armv7: "arm"
        case .powerpc64: "ppc64"
        case .powerpc64le: "ppc64le"
        default: rawValue
        }
    }
    var expectedMachine: UInt16 {
        switch self {
        case .x86_64: 62
        case .aarch64: 183
        case .i386: 3
        case .armv7: 40
        case .riscv64: 243
        case .powerpc64, .powerpc64le: 21
        case .mips: 8
        case .s390x: 22
        }
    }
    var is64Bit: Bool { ![.i386, .armv7, .mips].contains(self) }
    var isLittleEndian: Bool { ![.powerpc64, .mips, .s390x].contains(self) }
    var testDescription: String { rawValue }
}

/// A small C file with a global, a static and an exported function, and a string.
let smallSource = """
    int counter = 3;
    const char *greeting = "hello";
    static int scale(int x) { return x * counter; }
    int compute(int a) { return scale(a) + greeting[0]; }

    """

/// A C program large enough that every debug section shrinks when compressed.
func largeSource(functions: Int = 120) -> String {
    var text = "#include <stdio.h>\n"
    for index in 0..<functions {
        text += """
            struct record_\(index) { int count; long total; double ratio; char label[24]; };
            static int helper_\(index)(struct record_\(index) *record, int x) {
                int local = x * \(index + 1);
                for (int step = 0; step < record->count; step++) local += step ^ x;
                return local + (int)record->ratio + record->label[0];
            }
            int api_\(index)(int x) {
                struct record_\(index) record = { x & 7, x * 2L, x * 0.5, "record \(index)" };
                return helper_\(index)(&record, x)\(index > 0 ? " + api_\(index - 1)(x - 1)" : "");
            }

            """
    }
    text += "int main(int argc, char **argv) { printf(\"%d\\n\", api_\(functions - 1)(argc)); return 0; }\n"
    return text
}

/// Files compiled once per test run by the real toolchains, shared by all tests.
struct Fixtures: Sendable {
    /// Where everything lives; removed at process exit.
    let directory: TemporaryDirectory
    /// `smallSource` compiled with `clang -g -O1 -c` per target.
    let objects: [CrossTarget: String]
    /// `largeSource()` linked by gcc with `-g` (gcc adds a build-id).
    let program: String
    /// `program` with debug sections compressed by binutils objcopy: `=zlib` (SHF_COMPRESSED).
    let programZlib: String
    /// ... `=zlib-gnu` (`.zdebug_*`).
    let programZlibGNU: String
    /// ... `=zstd`.
    let programZstd: String
    /// The i386 object compressed by llvm-objcopy (`Elf32_Chdr`, zlib).
    let object32Zlib: String
    /// The big-endian powerpc64 object compressed by llvm-objcopy (big-endian `Elf64_Chdr`).
    let objectBigEndianZlib: String
    /// The x86_64 object compressed by llvm-objcopy (zlib), a small file for hostile tests.
    let objectZlib: String
    /// `smallSource` plus a `main`, linked by gcc, given a `.gnu_debuglink` and zstd-compressed
    /// DWARF: a small file with every structure (segments, notes, `.dynsym`, debug link).
    let linkedProgram: String

    /// The fixtures, or why they could not be made.
    static let shared: Result<Fixtures, any Error> = Result { try Fixtures() }

    /// The fixture directory is named by process id so that the exit handler, which cannot
    /// capture state, can find it.
    private static var directoryPath: String { "/tmp/symelf-fixtures-\(getpid())" }

    private init() throws {
        directory = try TemporaryDirectory(exactPath: Self.directoryPath)
        atexit { _ = try? Shell.run("rm -rf \(Shell.quote(Fixtures.directoryPath))") }
        let dir = directory
        try dir.write(smallSource, to: "small.c")
        try dir.write(largeSource(), to: "large.c")
        var objects: [CrossTarget: String] = [:]
        for target in CrossTarget.allCases {
            let output = dir.file("small-\(target.rawValue).o")
            try Shell.run("clang --target=\(target.triple) -g -O1 -c \(dir.file("small.c")) -o \(output)")
            objects[target] = output
        }
        self.objects = objects
        program = dir.file("large")
        try Shell.run("gcc -g -O1 -o \(program) \(dir.file("large.c"))")
        programZlib = dir.file("large-zlib")
        programZlibGNU = dir.file("large-zlib-gnu")
        programZstd = dir.file("large-zstd")
        try Shell.run("objcopy --compress-debug-sections=zlib \(program) \(programZlib)")
        try Shell.run("objcopy --compress-debug-sections=zlib-gnu \(program) \(programZlibGNU)")
        try Shell.run("objcopy --compress-debug-sections=zstd \(program) \(programZstd)")
        object32Zlib = dir.file("small-i386-zlib.o")
        objectBigEndianZlib = dir.file("small-powerpc64-zlib.o")
        objectZlib = dir.file("small-x86_64-zlib.o")
        try Shell.run("llvm-objcopy --compress-debug-sections=zlib \(objects[.i386]!) \(object32Zlib)")
        try Shell.run("llvm-objcopy --compress-debug-sections=zlib \(objects[.powerpc64]!) \(objectBigEndianZlib)")
        try Shell.run("llvm-objcopy --compress-debug-sections=zlib \(objects[.x86_64]!) \(objectZlib)")
        try dir.write("int compute(int);\nint main(int argc, char **argv) { return compute(argc); }\n", to: "main.c")
        linkedProgram = dir.file("small-linked")
        try Shell.run("""
            cd \(dir.path) && gcc -g -O1 -o small-exe small.c main.c && objcopy --only-keep-debug small-exe small-exe.debug \\
            && objcopy --add-gnu-debuglink=small-exe.debug --compress-debug-sections=zstd small-exe small-linked
            """)
    }
}

/// Binaries installed on this machine (Debian 12 packages named in the test brief).
enum SystemFile: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// coreutils: stripped PIE with a build-id, no DWARF.
    case ls
    /// python3.11-dbg: a large executable with uncompressed DWARF and a full `.symtab`.
    case python
    /// glibc itself: stripped shared object with `.dynsym` and a debug link.
    case libc
    /// libc6-dbg: libc's separate debug file (sections `SHT_NOBITS`, zlib-compressed DWARF).
    case libcDebug

    var path: String {
        get throws {
            switch self {
            case .ls: return "/bin/ls"
            case .python: return "/usr/bin/python3.11d"
            case .libc: return "/lib/x86_64-linux-gnu/libc.so.6"
            case .libcDebug:
                // Found by build-id, as debuggers do, rather than hard-coded.
                let id = try readelfBuildID(SystemFile.libc.path)
                return "/usr/lib/debug/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
            }
        }
    }

    var testDescription: String { rawValue }
}

/// The build-id that binutils readelf prints for `path`.
func readelfBuildID(_ path: String) throws -> String {
    let output = try Shell.run("readelf -nW \(Shell.quote(path))")
    guard let line = output.split(separator: "\n").first(where: { $0.contains("Build ID:") }),
          let id = line.split(separator: " ").last else {
        throw CommandError(command: "readelf -n \(path)", status: 0, output: "no build-id line")
    }
    return String(id)
}
