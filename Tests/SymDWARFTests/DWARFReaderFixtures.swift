import Testing

/// Programs compiled inside the tests, with each DWARF version, format and producer the reader
/// must handle. Sources are chosen for what they make compilers emit: inlined calls (nested, in
/// lexical blocks, from a header), hot/cold split functions (`DW_AT_ranges`), GNU nested functions,
/// C++ namespaces, out-of-line members (`DW_AT_specification`), templates, lambdas, local classes.
enum DWARFReaderFixtures {
    /// One compiler configuration.
    struct Build: Sendable, CustomTestStringConvertible {
        /// Short name, also the output file name.
        let name: String
        /// Compiler command.
        let compiler: String
        /// Flags.
        let flags: String
        /// Whether the sources are the C++ ones.
        let cplusplus: Bool

        var testDescription: String { name }
    }

    /// Every configuration the differential tests run.
    static let builds: [Build] = [
        Build(name: "gcc-dwarf2-O0", compiler: "gcc", flags: "-gdwarf-2 -O0", cplusplus: false),
        Build(name: "gcc-dwarf3-O2", compiler: "gcc", flags: "-gdwarf-3 -O2", cplusplus: false),
        Build(name: "gcc-dwarf4-O2", compiler: "gcc", flags: "-gdwarf-4 -O2", cplusplus: false),
        Build(name: "gcc-dwarf4-O2-dwarf64", compiler: "gcc", flags: "-gdwarf-4 -gdwarf64 -O2", cplusplus: false),
        Build(name: "gcc-dwarf5-O0", compiler: "gcc", flags: "-gdwarf-5 -O0", cplusplus: false),
        Build(name: "gcc-dwarf5-O2", compiler: "gcc", flags: "-gdwarf-5 -O2", cplusplus: false),
        Build(name: "gcc-dwarf5-O2-dwarf64", compiler: "gcc", flags: "-gdwarf-5 -gdwarf64 -O2", cplusplus: false),
        Build(name: "g++-dwarf4-O2", compiler: "g++", flags: "-gdwarf-4 -O2", cplusplus: true),
        Build(name: "g++-dwarf5-O0", compiler: "g++", flags: "-gdwarf-5 -O0", cplusplus: true),
        Build(name: "g++-dwarf5-O2", compiler: "g++", flags: "-gdwarf-5 -O2", cplusplus: true),
        Build(name: "clang-dwarf2-O1", compiler: "clang", flags: "-gdwarf-2 -O1", cplusplus: false),
        Build(name: "clang-dwarf4-O2", compiler: "clang", flags: "-gdwarf-4 -O2", cplusplus: false),
        Build(name: "clang-dwarf4-O2-sections", compiler: "clang",
              flags: "-gdwarf-4 -O2 -ffunction-sections -mllvm -use-dwarf-ranges-base-address-specifier",
              cplusplus: false),
        Build(name: "clang-dwarf5-O0", compiler: "clang", flags: "-gdwarf-5 -O0", cplusplus: false),
        Build(name: "clang-dwarf5-O2", compiler: "clang", flags: "-gdwarf-5 -O2", cplusplus: false),
        Build(name: "clang-dwarf5-O2-dwarf64", compiler: "clang", flags: "-gdwarf-5 -gdwarf64 -O2", cplusplus: false),
        Build(name: "clang++-dwarf4-O2", compiler: "clang++", flags: "-gdwarf-4 -O2", cplusplus: true),
        Build(name: "clang++-dwarf5-O2", compiler: "clang++", flags: "-gdwarf-5 -O2 -ffunction-sections", cplusplus: true),
    ]

    /// Compiles `build` into a fresh directory and returns the executable's path.
    static func compile(_ build: Build) throws -> String {
        let directory = try DWARFReaderShell.temporaryDirectory("dwarfreader-\(build.name)")
        let sources = build.cplusplus ? cplusplusSources : cSources
        for (name, text) in sources { try DWARFReaderShell.write(text, to: directory + "/" + name) }
        let files = sources.map(\.name).filter { !$0.hasSuffix(".h") }.joined(separator: " ")
        let output = directory + "/" + build.name
        // Relative source paths and a compilation directory make the file-name joins non-trivial.
        try DWARFReaderShell.run("cd \(DWARFReaderShell.quote(directory)) && \(build.compiler) \(build.flags) "
            + "-Wl,--build-id=sha1 -o \(DWARFReaderShell.quote(output)) \(files)")
        return output
    }

    /// A two-unit C program with a shared header of inline functions.
    static let cSources: [(name: String, text: String)] = [
        ("common.h", """
            #ifndef COMMON_H
            #define COMMON_H
            static inline int square(int x) { return x * x; }
            static inline int cube(int x) { return square(x) * x; }
            static inline __attribute__((always_inline)) int twice(int x) { return x + x; }
            #endif

            """),
        ("main.c", """
            #include <stdio.h>
            #include <stdlib.h>
            #include "common.h"

            extern int helper(int);
            extern volatile int sink;

            __attribute__((noinline)) static int compute(int n) {
                int total = 0;
                for (int i = 0; i < n; i++) {
                    int local = cube(i);
                    if (local & 1) {
                        int inner = twice(local);
                        total += inner;
                    }
                }
                return total;
            }

            __attribute__((cold, noinline)) void fail(const char *why) {
                fprintf(stderr, "%s\\n", why);
                abort();
            }

            int checked(int x) {
                if (__builtin_expect(x < 0, 0)) {
                    fail("negative");
                    sink = x * 3;
                }
                return square(x) + twice(x);
            }

            #ifndef __clang__
            int outer(int x) {
                int inner(int y) { return y * x + sink; }
                return inner(x) + inner(x + 1);
            }
            #else
            int outer(int x) { return x; }
            #endif

            int main(int argc, char **argv) {
                (void)argv;
                int value = compute(argc + 5) + checked(argc) + helper(argc) + outer(argc);
                printf("%d\\n", value);
                return value == 42;
            }

            """),
        ("other.c", """
            #include "common.h"

            volatile int sink;
            static int table[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

            struct pair { int first; int second; };

            static int sum_pair(struct pair p) { return p.first + twice(p.second); }

            int helper(int x) {
                struct pair p = { cube(x), table[x & 15] };
                switch (x) {
                case 1: return sum_pair(p) + square(x);
                case 2: return sum_pair(p) * 3;
                default: return sum_pair(p) - sink;
                }
            }

            """),
    ]

    /// A C++ program with namespaces, classes, templates, lambdas and a local class.
    static let cplusplusSources: [(name: String, text: String)] = [
        ("shapes.h", """
            #pragma once
            namespace geometry {
            struct Point {
                int x, y;
                int norm() const;
                int sum() const { return x + y; }
            };
            template <typename T> T scale(T value, T factor) { return value * factor; }
            class Shape {
            public:
                virtual ~Shape() {}
                virtual int area() const = 0;
            };
            class Square : public Shape {
                int side;
            public:
                explicit Square(int s) : side(s) {}
                int area() const override { return scale(side, side); }
            };
            int total(const Shape &shape, int times);
            }

            """),
        ("shapes.cpp", """
            #include "shapes.h"
            namespace geometry {
            int Point::norm() const { return x * x + y * y; }
            int total(const Shape &shape, int times) {
                int sum = 0;
                for (int i = 0; i < times; i++) sum += shape.area() + scale(i, 2);
                return sum;
            }
            }

            """),
        ("main.cpp", """
            #include <cstdio>
            #include "shapes.h"

            static int apply(int (*f)(int), int v) { return f(v); }

            int main(int argc, char **) {
                geometry::Point p{argc, 2};
                auto lambda = [&](int k) { return p.sum() * k; };
                struct Local {
                    static int twice(int v) { return v * 2; }
                    int member(int v) const { return v + 1; }
                };
                Local local;
                geometry::Square square(argc + 2);
                std::printf("%d %d %d %d %d\\n", p.norm(), lambda(3), Local::twice(argc), local.member(argc),
                            geometry::total(square, argc));
                return apply([](int v) { return v + 1; }, argc) + (geometry::scale(1.5, 2.0) > 0 ? 0 : 1);
            }

            """),
    ]
}
