import Foundation
import Testing
import TestSupport

/// `crashsym symbolicate core`: real cores made by `scripts/build-core-fixtures` (into a
/// temporary directory, once), walked by crashsym and compared with `eu-stack -i` and gdb's
/// `thread apply all bt` on the same core.
@Suite(.serialized) struct CoreFileCommandTests {
    /// The fixtures' directory: the programs and their cores.
    static let cores: Result<String, CoreFixtureError> = {
        guard let directory = try? CLI.temporaryDirectory() else { return .failure(CoreFixtureError(description: "no temporary directory")) }
        let script = CLI.root.appendingPathComponent("scripts/build-core-fixtures").path
        guard let run = try? Tool.run("/bin/bash", [script, directory]), run.status == 0 else {
            return .failure(CoreFixtureError(description: "scripts/build-core-fixtures failed"))
        }
        return .success(directory)
    }()

    struct CoreFixtureError: Error, CustomStringConvertible {
        var description: String
    }

    static let fixtures = ["crash-O0", "crash-O2", "threads", "libc-strlen", "signal-abort",
                           "cpp-O0", "cpp-O2", "cpp-terminate", "rust-panic", "swift-unwrap"]

    /// A physical frame: its pc and the functions at it, innermost (inlined) first.
    struct Frame: Equatable, CustomStringConvertible {
        var pc: UInt64
        var functions: [String]
        /// crashsym's: the module's name and the pc's file virtual address.
        var module: String? = nil
        var offset: UInt64? = nil
        var description: String { "0x" + String(pc, radix: 16) + " " + functions.joined(separator: " < ") }
    }

    /// crashsym's frames by thread id, the crashed thread and the signal, from `--format json`.
    static func ours(_ core: String) throws -> (threads: [String: [Frame]], crashed: [String], signal: String?, reason: String?) {
        // One conversion cache for all runs (libc's tables are converted once).
        let cache = URL(fileURLWithPath: core).deletingLastPathComponent().appendingPathComponent("cache").path
        let run = try CLI.run(["symbolicate", core, "--format", "json", "--cache-dir", cache])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        var threads: [String: [Frame]] = [:]
        var crashed: [String] = []
        for stack in document["stacks"] as? [[String: Any]] ?? [] {
            let thread = try #require(stack["thread"] as? String)
            if stack["crashed"] as? Bool == true { crashed.append(thread) }
            threads[thread] = (stack["frames"] as? [[String: Any]] ?? []).map { frame in
                let address = (frame["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } ?? 0
                let names = (frame["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
                let offset = (frame["module_offset"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
                return Frame(pc: address, functions: names, module: frame["module"] as? String, offset: offset)
            }
        }
        return (threads, crashed, document["signal"] as? String, document["reason"] as? String)
    }

    /// eu-stack -i's frames by thread id; its inlined frames (the same pc printed again) are
    /// folded into one physical frame.
    static func euStack(_ core: String, executable: String) throws -> [String: [Frame]] {
        let text = try Tool.output("/usr/bin/eu-stack", ["-i", "--core", core, "-e", executable])
        var threads: [String: [Frame]] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("TID ") {
                current = String(line.dropFirst(4).dropLast())
                threads[current!] = []
                continue
            }
            guard let thread = current, line.hasPrefix("#") else { continue }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let pc = UInt64(fields[1].dropFirst(2), radix: 16) else { continue }
            // A frame eu-stack names nothing has no function (crashsym's: none either).
            let names = fields.count > 2 ? [String(fields[2])] : []
            if let last = threads[thread]?.last, last.pc == pc {
                threads[thread]![threads[thread]!.count - 1].functions.append(contentsOf: names)
            } else {
                threads[thread]!.append(Frame(pc: pc, functions: names))
            }
        }
        return threads
    }

    /// gdb's frames by thread id (LWP): (pc when printed, function); `<signal handler called>`
    /// is kept as such.
    static func gdb(_ core: String, executable: String) throws -> [String: [(pc: UInt64?, function: String)]] {
        let text = try Tool.output("/usr/bin/gdb", ["-q", "-batch", "-ex", "thread apply all bt", executable, core])
        var threads: [String: [(pc: UInt64?, function: String)]] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("Thread "), let range = line.range(of: "(LWP ") {
                current = String(line[range.upperBound...].prefix { $0.isNumber })
                threads[current!] = []
                continue
            }
            guard let thread = current, line.hasPrefix("#") else { continue }
            var fields = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst()
            var pc: UInt64?
            if let first = fields.first, first.hasPrefix("0x") {
                pc = UInt64(first.dropFirst(2), radix: 16)
                fields = fields.dropFirst(2)  // "0x… in"
            }
            let function = fields.first.map(String.init) ?? "??"
            threads[thread]!.append((pc, function.hasPrefix("<signal") ? "<signal handler called>" : function))
        }
        return threads
    }

    /// The names eu-stack prints that are another name of the same glibc function crashsym
    /// names from DWARF: eu-stack takes the ELF symbol it meets first at the address (glibc's
    /// internal `__GI_` aliases, the versioned `_impl` and triple-underscore definitions),
    /// crashsym the `DW_AT_name` of the function. Each pair was checked in libc's symbol table:
    /// both names are symbols at the same address.
    static let glibcAliases: [String: String] = [
        "__libc_start_main_impl": "__libc_start_main", "__GI_raise": "raise", "__GI_abort": "abort",
        "___pthread_cond_wait": "pthread_cond_wait", "__GI___clock_nanosleep": "clock_nanosleep",
        "__GI___nanosleep": "__nanosleep", "__clone3": "clone3",
    ]

    /// A function name without a compiler clone suffix (`crash.constprop.0` is `crash`: eu-stack
    /// names the clone by its DWARF origin, crashsym by the clone's symbol; demangled C++
    /// spells it `parse(int) [clone .cold]`).
    static func withoutCloneSuffix(_ name: String) -> String {
        for suffix in [" [clone ", ".constprop.", ".isra.", ".part.", ".cold"] {
            if let range = name.range(of: suffix) { return String(name[..<range.lowerBound]) }
        }
        return name
    }

    /// The part of a function name both tools spell alike: its last component, without
    /// parameters or clone suffix. eu-stack names a function by its DWARF `DW_AT_name` or its
    /// ELF symbol, crashsym by the demangled linkage name: `store` and
    /// `shapes::store(int*, int)` are one function; eu-stack leaves Rust's legacy hash
    /// (`::h57071e38e2bc223f`) and `$u7b$` escapes in, crashsym removes and decodes them.
    static func comparable(_ name: String) -> String {
        var name = withoutCloneSuffix(name)
        if let hash = name.range(of: #"::h[0-9a-f]{16}$"#, options: .regularExpression) { name.removeSubrange(hash) }
        name = name.replacingOccurrences(of: "_$u7b$$u7b$closure$u7d$$u7d$", with: "{{closure}}")
        var depth = 0, end = name.endIndex, lastComponent = name.startIndex
        var index = name.startIndex
        while index < name.endIndex {
            let character = name[index]
            if character == "<" { depth += 1 } else if character == ">" { depth -= 1 }
            if depth == 0 && character == "(" && index > name.startIndex { end = index; break }
            if depth == 0 && name[index...].hasPrefix("::") { lastComponent = name.index(index, offsetBy: 2) }
            index = name.index(after: index)
        }
        return String(name[(lastComponent < end ? lastComponent : name.startIndex)..<end])
    }

    /// binutils addr2line's inline chain at a file virtual address of `executable`, innermost first.
    static func addr2line(_ executable: String, _ address: UInt64) throws -> [String] {
        let text = try Tool.output("/usr/bin/addr2line", ["-i", "-f", "-C", "-e", executable, "0x" + String(address, radix: 16)])
        return text.split(separator: "\n").enumerated().filter { $0.offset % 2 == 0 }.map { String($0.element) }
    }

    /// Swift names as swift-demangle (the toolchain's, the oracle) spells them: eu-stack prints
    /// Swift symbols mangled.
    static func demangledSwift(_ names: [String]) throws -> [String: String] {
        let mangled = Array(Set(names.filter { $0.hasPrefix("$s") }))
        guard !mangled.isEmpty else { return [:] }
        let output = try Tool.output("/opt/swift/usr/bin/swift-demangle", ["-compact"] + mangled)
        return Dictionary(uniqueKeysWithValues: zip(mangled, output.split(separator: "\n").map(String.init)))
    }

    @Test("Every thread of every fixture core: the same pcs as eu-stack -i, the same functions", arguments: fixtures)
    func framesMatchEuStack(_ name: String) throws {
        let directory = try Self.cores.get()
        let core = "\(directory)/\(name).core", executable = "\(directory)/\(name)"
        let ours = try Self.ours(core).threads
        let theirs = try Self.euStack(core, executable: executable)
        let swiftNames = try Self.demangledSwift(theirs.values.flatMap { $0.flatMap(\.functions) })
        #expect(Set(ours.keys) == Set(theirs.keys))
        for (thread, expected) in theirs {
            let frames = ours[thread] ?? []
            #expect(frames.map(\.pc) == expected.map(\.pc), "thread \(thread): ours \(frames) eu-stack \(expected)")
            for (number, (mine, their)) in zip(frames, expected).enumerated() where mine.pc == their.pc {
                // eu-stack 0.188 prints no inlined frames for some of rustc's precompiled libstd
                // units (std::rt::lang_start_internal's nine-deep chain): there binutils'
                // addr2line -i on the same address is the oracle, and eu-stack's one name is the
                // physical function, the chain's outermost.
                if their.functions.count == 1 && mine.functions.count > 1, let offset = mine.offset,
                   mine.module == URL(fileURLWithPath: executable).lastPathComponent {
                    let chain = try Self.addr2line(executable, number == 0 ? offset : offset - 1)
                    #expect(chain.map(Self.comparable) == mine.functions.map(Self.comparable), "\(mine) / addr2line \(chain)")
                    #expect(Self.comparable(mine.functions.last!) == Self.comparable(their.functions[0]))
                    continue
                }
                // eu-stack prints the inlined frames' DWARF names innermost first, as crashsym does;
                // the physical function's name may be another symbol of it (glibcAliases).
                let innermost = Self.comparable(mine.functions.first ?? "??")
                let expectedName = Self.comparable(their.functions.first.map { Self.glibcAliases[$0] ?? swiftNames[$0] ?? $0 } ?? "??")
                #expect(innermost == expectedName, "thread \(thread) pc 0x\(String(mine.pc, radix: 16)): \(mine) / eu-stack \(their)")
                #expect(mine.functions.count == their.functions.count, "inline depth at \(mine) / eu-stack \(their)")
            }
        }
    }

    @Test("gdb's thread apply all bt: every caller pc crashsym finds, in gdb's order", arguments: fixtures)
    func framesMatchGDB(_ name: String) throws {
        let directory = try Self.cores.get()
        let core = "\(directory)/\(name).core", executable = "\(directory)/\(name)"
        let ours = try Self.ours(core).threads
        let theirs = try Self.gdb(core, executable: executable)
        #expect(Set(ours.keys) == Set(theirs.keys))
        for (thread, gdbFrames) in theirs {
            let frames = ours[thread] ?? []
            // Differences, each explained:
            // - gdb prints no pc for a frame whose pc starts a line (frame 0 mostly) nor for
            //   inlined frames: only printed pcs are compared;
            // - gdb stops at main (its "backtrace past-main" is off): ours go on to _start;
            // - gdb adds frames for tail calls from DWARF call-site records
            //   (`__GI___futex_abstimed_wait_cancelable64`, `__pthread_kill_internal`): pcs that
            //   are no return address on the stack, which neither eu-stack nor crashsym print. So
            //   each of our pcs up to main must be among gdb's, in order, not the reverse.
            let gdbPCs = gdbFrames.compactMap(\.pc)
            // gdb stops at the program's main: C's `main`, or the language's own (Rust's
            // `panic::main`, its last printed frame; `std::rt::lang_start` and C's main follow).
            let lastGDB = gdbPCs.last.flatMap { last in frames.firstIndex { $0.pc == last } }
                ?? frames.firstIndex { $0.functions.contains("main") } ?? frames.count - 1
            var position = 0
            // gdb's `<signal handler called>` has no pc: our trampoline frame is matched below.
            for frame in frames.prefix(lastGDB + 1).dropFirst() where frame.functions.first != "__restore_rt" {
                guard let found = gdbPCs[position...].firstIndex(of: frame.pc) else {
                    Issue.record("thread \(thread): 0x\(String(frame.pc, radix: 16)) (\(frame)) is not in gdb's \(gdbFrames)")
                    break
                }
                position = found + 1
            }
            // Where gdb shows the kernel's signal frame, ours has glibc's trampoline.
            if gdbFrames.contains(where: { $0.function == "<signal handler called>" }) {
                #expect(frames.contains { $0.functions.first == "__restore_rt" }, "thread \(thread): \(frames)")
            }
        }
    }

    @Test("The signal from NT_SIGINFO, the crashed thread marked, the text in eu-stack's layout")
    func signalAndCrashedThread() throws {
        let directory = try Self.cores.get()
        let segv = try Self.ours("\(directory)/threads.core")
        #expect(segv.signal == "SIGSEGV")
        #expect(segv.reason == "SEGV_MAPERR at 0x0")
        #expect(segv.crashed.count == 1)
        #expect(segv.threads[segv.crashed[0]]?.first?.functions.first.map(Self.withoutCloneSuffix) == "crash")
        let strlen = try Self.ours("\(directory)/libc-strlen.core")
        #expect(strlen.reason == "SEGV_MAPERR at 0x10")
        let abort = try Self.ours("\(directory)/signal-abort.core")
        #expect(abort.signal == "SIGABRT")
        #expect(abort.reason == "SI_TKILL")
        let text = try CLI.run(["symbolicate", "\(directory)/crash-O0.core", "--cache-dir", "\(directory)/cache"])
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasSuffix(" - core") == true)
        #expect(lines.contains { $0.hasPrefix("TID ") && $0.hasSuffix(":") })
        #expect(lines.contains { $0.hasPrefix("#0  0x") && $0.contains(" in leaf ") && $0.contains("crash.c:4") })
    }

    @Test("--max-report-frames bounds a core's walks, its threads together: exactly their frames pass, one fewer is exit 1 with the reason and nothing printed")
    func frameBudget() throws {
        let directory = try Self.cores.get()
        let core = "\(directory)/threads.core"
        let total = try Self.ours(core).threads.values.reduce(0) { $0 + $1.count }
        #expect(total > 5, "the threaded core walks to several frames")
        let cache = ["--cache-dir", "\(directory)/cache"]
        let exact = try CLI.run(["symbolicate", core, "--max-report-frames", String(total)] + cache)
        #expect(exact.status == 0, "\(exact.stderr)")
        let short = try CLI.run(["symbolicate", core, "--max-report-frames", String(total - 1)] + cache)
        #expect(short.status == 1)
        #expect(short.stderr.contains("threads walk to more than \(total - 1) frames (--max-report-frames)"), "\(short.stderr)")
        #expect(short.stdout.isEmpty, "nothing printed in part")
    }

    @Test("The program from --symbols alone (module paths not read): its CFI walks the program's frames")
    func programFromSymbols() throws {
        let directory = try Self.cores.get()
        let elsewhere = directory + "/elsewhere"
        try? FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: elsewhere + "/app")
        try FileManager.default.copyItem(atPath: directory + "/crash-O2", toPath: elsewhere + "/app")
        let run = try CLI.run(["symbolicate", directory + "/crash-O2.core", "--format", "json", "--no-cache",
                               "--no-module-paths", "--symbols", elsewhere + "/app"])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let frames = try #require((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        let names = frames.prefix(4).map { (($0["symbolized"] as? [[String: Any]])?.first?["function"] as? String) ?? "??" }
        #expect(names == ["leaf", "middle", "top", "main"])
        let expected = try Self.euStack(directory + "/crash-O2.core", executable: directory + "/crash-O2")
        let pcs = frames.prefix(4).compactMap { ($0["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } }
        #expect(pcs == expected.values.first.map { Array($0.prefix(4).map(\.pc)) })
    }

    @Test("A call through a null pointer: eu-stack stops at pc 0, crashsym goes on as gdb does (the caller by scanning)")
    func nullFunctionPointer() throws {
        let directory = try Self.cores.get()
        let core = "\(directory)/null-call.core", executable = "\(directory)/null-call"
        let ours = try #require(try Self.ours(core).threads.values.first)
        // eu-stack: "dwfl_thread_getframes … at 0x0 in <unknown>: address out of range", one frame.
        let theirs = try #require(try Self.euStack(core, executable: executable).values.first)
        #expect(theirs.map(\.pc) == [0])
        let gdbFrames = try #require(try Self.gdb(core, executable: executable).values.first)
        #expect(ours.first?.pc == 0)
        let names = ours.map { $0.functions.first ?? "??" }
        #expect(Array(names.dropFirst().prefix(2)) == ["invoke", "main"])
        #expect(Array(ours.dropFirst().prefix(2).map(\.pc)) == Array(gdbFrames.dropFirst().prefix(2).compactMap(\.pc)))
    }

    @Test("The frame a signal interrupted is looked up at its pc, not pc - 1")
    func interruptedFrameIsExact() throws {
        let directory = try Self.cores.get()
        let run = try CLI.run(["symbolicate", "\(directory)/signal-abort.core", "--format", "json", "--cache-dir", "\(directory)/cache"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let frames = try #require((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        let names = frames.map { (($0["symbolized"] as? [[String: Any]])?.first?["function"] as? String) ?? "??" }
        let trampoline = try #require(names.firstIndex(of: "__restore_rt"))
        #expect(names[trampoline + 1] == "fault")
        #expect(frames[trampoline + 1]["address_kind"] as? String == "exact")
        #expect(frames[trampoline + 2]["address_kind"] as? String == "return-address")
    }

    @Test("Stopped inside the vDSO (gdb stops date(1) in clock_gettime and writes the core): its CFI from the core's memory walks out as gdb and eu-stack do, its frame named from its .dynsym there as eu-stack names it")
    func throughTheVDSO() throws {
        let directory = try Self.cores.get()
        let core = directory + "/vdso-" + UUID().uuidString + ".core"
        defer { try? FileManager.default.removeItem(atPath: core) }
        // gdb reads the vDSO's symbols from the process's memory; date calls clock_gettime once.
        let run = try Tool.run("/usr/bin/timeout", ["60", "gdb", "-q", "-nx", "-batch", "-ex", "set startup-with-shell off",
                                                    "-ex", "starti", "-ex", "break __vdso_clock_gettime", "-ex", "continue",
                                                    "-ex", "generate-core-file \(core)", "-ex", "bt", "/bin/date"])
        let gdbPCs = run.text.split(separator: "\n").filter { $0.hasPrefix("#") }.compactMap { line -> UInt64? in
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            return words.count > 1 && words[1].hasPrefix("0x") ? UInt64(words[1].dropFirst(2), radix: 16) : nil
        }
        try #require(gdbPCs.count >= 4 && FileManager.default.fileExists(atPath: core), "gdb: \(run.text) \(run.stderr)")
        let result = try CLI.run(["symbolicate", core, "--format", "json", "--cache-dir", directory + "/cache"])
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let frames = try #require((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        let pcs = frames.compactMap { ($0["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } }
        // Frame 0 is in the vDSO, a module of the core's memory; its caller (libc's
        // clock_gettime) by the vDSO's own CFI, and the frames after it by libc's and date's.
        #expect(frames.first?["module"] as? String == "[vdso]", "\(frames.first ?? [:])")
        #expect(frames.dropFirst().prefix(gdbPCs.count - 1).allSatisfy { $0["found_by"] as? String == "cfi" },
                "\(frames.map { $0["found_by"] ?? "-" })")
        #expect(Array(pcs.prefix(gdbPCs.count)) == gdbPCs, "ours \(pcs) gdb \(gdbPCs)")
        let euStack = try #require(try Self.euStack(core, executable: "/bin/date").values.first)
        #expect(Array(pcs.prefix(euStack.count)) == euStack.map(\.pc), "ours \(pcs) eu-stack \(euStack)")
        // Frame 0 named from the vDSO's .dynsym in the core's memory, as eu-stack names it.
        let vdsoName = (frames.first?["symbolized"] as? [[String: Any]])?.first?["function"] as? String
        #expect(frames.first?["status"] as? String == "ok", "\(frames.first ?? [:])")
        #expect(vdsoName != nil && vdsoName == euStack.first?.functions.first, "ours \(vdsoName ?? "none") eu-stack \(euStack.first.map { "\($0)" } ?? "")")
    }

    /// The GNU build-id readelf -n prints for `path`.
    static func readelfBuildID(_ path: String) throws -> String? {
        let text = try Tool.output("/usr/bin/readelf", ["-n", path])
        guard let range = text.range(of: "Build ID: ") else { return nil }
        return String(text[range.upperBound...].prefix { $0.isHexDigit })
    }

    @Test("A core without the images' first pages (coredump_filter bit 4 off): the build-ids from the files on disk, as readelf reads them")
    func buildIDsFromDisk() throws {
        let directory = try Self.cores.get()
        let work = directory + "/no-headers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        // The filter is inherited: anonymous and file-backed private memory, no ELF header pages.
        // The kernel's core when core_pattern is a plain name, else gdb's (which honours it).
        let program = directory + "/crash-O2"
        _ = try Tool.run("/bin/sh", ["-c", "cd '\(work)' && echo 0x23 > /proc/self/coredump_filter && ulimit -c unlimited && "
                                     + "(setarch $(uname -m) -R '\(program)' || true) >/dev/null 2>&1; "
                                     + "ls core* >/dev/null 2>&1 || gdb -q -nx -batch -ex 'set startup-with-shell off' -ex run "
                                     + "-ex 'generate-core-file \(work)/core' '\(program)' >/dev/null 2>&1"])
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: work).first { $0.hasPrefix("core") })
        let core = work + "/" + name
        let run = try CLI.run(["symbolicate", core, "--format", "json", "--cache-dir", directory + "/cache"])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let modules = try #require(document["modules"] as? [[String: Any]]).filter { ($0["path"] as? String)?.hasPrefix("/") == true }
        #expect(modules.count >= 3)
        // The core holds no image's first page (readelf -l: no segment with file bytes there) ...
        let segments = try Tool.output("/usr/bin/readelf", ["-lW", core]).split(separator: "\n").compactMap { line -> Range<UInt64>? in
            let words = line.split(separator: " ")
            guard words.first == "LOAD", words.count >= 5, let address = UInt64(words[2].dropFirst(2), radix: 16),
                  let size = UInt64(words[4].dropFirst(2), radix: 16) else { return nil }
            return address..<(address + size)
        }
        #expect(segments.count > 3)
        for module in modules {
            let path = module["path"] as? String ?? ""
            let start = (module["load_address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } ?? 0
            #expect(!segments.contains { $0.contains(start) }, "\(path): its first page is in the core")
            // ... so each build-id is its file's.
            #expect(module["build_id"] as? String == (try Self.readelfBuildID(path)), "\(path)")
        }
        let frames = try #require((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        let names = frames.prefix(4).map { (($0["symbolized"] as? [[String: Any]])?.first?["function"] as? String) ?? "??" }
        #expect(names == ["leaf", "middle", "top", "main"])
    }

    /// The document of `crashsym symbolicate` with `arguments`, run through `/bin/sh -c` so that
    /// standard input can be a file or a pipe.
    static func shellJSON(_ command: String) throws -> [String: Any] {
        let run = try Tool.run("/bin/sh", ["-c", command])
        #expect(run.status == 0, "\(command): \(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.text.utf8)) as? [String: Any])
    }

    static func pcs(_ document: [String: Any]) -> [String] {
        ((document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
    }

    @Test("A core on standard input (redirected or piped) gives the file's report; format core, frames found by context then cfi")
    func coreOnStandardInput() throws {
        let directory = try Self.cores.get()
        let core = "\(directory)/crash-O2.core", cache = "\(directory)/cache"
        let fromFile = try Self.shellJSON("'\(CLI.binary)' symbolicate '\(core)' --format json --cache-dir '\(cache)'")
        let redirected = try Self.shellJSON("'\(CLI.binary)' symbolicate - --format json --cache-dir '\(cache)' < '\(core)'")
        let piped = try Self.shellJSON("cat '\(core)' | '\(CLI.binary)' symbolicate --format json --cache-dir '\(cache)'")
        #expect(fromFile["format"] as? String == "core")
        #expect(redirected["format"] as? String == "core")
        #expect(redirected["source"] as? String == "-")
        #expect(Self.pcs(fromFile).count >= 5)
        #expect(Self.pcs(redirected) == Self.pcs(fromFile))
        #expect(Self.pcs(piped) == Self.pcs(fromFile))
        let frames = try #require((piped["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]])
        #expect(frames.first?["found_by"] as? String == "context")
        #expect(frames.dropFirst().prefix(3).allSatisfy { $0["found_by"] as? String == "cfi" })
        // Text from a pipe: the eu-stack layout, each frame's Found by line under it.
        let text = try Tool.run("/bin/sh", ["-c", "cat '\(core)' | '\(CLI.binary)' symbolicate --cache-dir '\(cache)'"])
        #expect(text.status == 0)
        #expect(text.text.contains(" - core\n"))
        #expect(text.text.contains(" in leaf "))
        #expect(text.text.contains("\n    Found by: cfi\n"))
        // A truncated core on standard input: an error naming it, exit 1, nothing printed as a report.
        let cut = try Tool.run("/bin/sh", ["-c", "head -c 100 '\(core)' | '\(CLI.binary)' symbolicate --no-cache"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("<stdin>"))
    }

    @Test("--executable: the program when the core's path is gone; checked against the core's build-id")
    func executableFlag() throws {
        // A fixture set of its own, whose program is then moved away from the path the core names.
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = CLI.root.appendingPathComponent("scripts/build-core-fixtures").path
        #expect(try Tool.run("/bin/bash", [script, directory]).status == 0)
        let moved = directory + "/moved-crash-O2"
        try FileManager.default.moveItem(atPath: directory + "/crash-O2", toPath: moved)
        let core = directory + "/crash-O2.core"
        func names(_ arguments: [String]) throws -> [(String?, String?)] {
            let run = try CLI.run(["symbolicate", core, "--format", "json", "--no-cache"] + arguments)
            #expect(run.status == 0, "\(run.stderr)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let frames = (document["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]] ?? []
            return frames.prefix(4).map { (($0["symbolized"] as? [[String: Any]])?.first?["function"] as? String, $0["status"] as? String) }
        }
        // Without it: the program's frames have no symbols (its path is not here).
        #expect(try names([]).first?.1 == "no-symbols")
        // With it: its symbols, and its CFI walks the -O2 frames as eu-stack does.
        #expect(try names(["--executable", moved]).map(\.0) == ["leaf", "middle", "top", "main"])
        // Another build (crash-O0) is refused: never symbolicated with another build-id (its
        // candidate is "another module", the frame has no symbols).
        let refused = try names(["--executable", directory + "/crash-O0"])
        #expect(refused.first?.1 == "no-symbols")
        #expect(refused.first?.0 == nil)
    }
}
