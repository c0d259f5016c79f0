import Foundation
import SymBytes
import SymReport
import Testing
@testable import Symbolication

/// Each rule of docs/grouping.md on small stacks, and the rules document's validation.
@Suite struct GroupingRulesTests {
    /// A frame of a synthetic stack: resolved to a chain of functions (innermost first) in a
    /// module, or unresolved at an offset.
    struct Frame {
        var module: String
        var functions: [String]
        var offset: UInt64 = 0x1000
        var file: String = ""
        static func app(_ functions: String..., file: String = "/src/app.c") -> Frame { Frame(module: "app", functions: functions, file: file) }
        static func libc(_ functions: String...) -> Frame { Frame(module: "libc.so.6", functions: functions) }
        static func unresolved(_ module: String, _ offset: UInt64) -> Frame { Frame(module: module, functions: [], offset: offset) }
    }

    /// A symbolicated report with one crashed stack of `frames` (top first), plus `otherStacks`.
    static func report(_ frames: [Frame], signal: String? = "SIGSEGV", format: ReportFormat = .sanitizer,
                       before otherStacks: [[Frame]] = []) -> SymbolicatedReport {
        var report = CrashReport(format: format, signal: signal)
        var resolutions: [[FrameResolution]] = []
        for (number, stack) in (otherStacks + [frames]).enumerated() {
            var reportStack = ReportStack(name: "stack \(number)", crashed: number == otherStacks.count)
            var stackResolutions: [FrameResolution] = []
            for (index, frame) in stack.enumerated() {
                let module = report.moduleIndex(path: "/opt/app/" + frame.module)
                reportStack.frames.append(ReportFrame(index: index, module: module, moduleOffset: frame.offset))
                if frame.functions.isEmpty {
                    stackResolutions.append(FrameResolution(status: .noSymbols, reason: "none", moduleAddress: frame.offset))
                } else {
                    let locations = frame.functions.map { SourceLocation(function: $0, mangled: $0, file: frame.file, line: 10, column: 1) }
                    stackResolutions.append(FrameResolution(status: .ok, moduleAddress: frame.offset, lookupAddress: frame.offset,
                                                            locations: locations))
                }
            }
            report.stacks.append(reportStack)
            resolutions.append(stackResolutions)
        }
        return SymbolicatedReport(report: report, frames: resolutions)
    }

    static func signature(_ frames: [Frame], rules: GroupingRules = .defaults, signal: String? = "SIGSEGV",
                          format: ReportFormat = .sanitizer) -> CrashSignature {
        CrashSignature.compute(for: report(frames, signal: signal, format: format), rules: rules)
    }

    // MARK: Skipping

    @Test func abortRaiseAndAssertAreSkipped() {
        let signature = Self.signature([
            .libc("__pthread_kill_implementation"), .libc("__GI_raise"), .libc("raise"), .libc("pthread_kill"), .libc("abort"),
            .libc("__assert_fail_base"), .libc("__assert_fail"), .app("check"), .app("caller"), .app("main"),
        ], signal: "SIGABRT")
        #expect(signature.signature == "check | caller")
        #expect(signature.title == "SIGABRT in check")
        for frame in signature.frames.prefix(7) {
            #expect(frame.role == .skipped && frame.rule?.action == .skip && frame.rule?.origin == .builtin, "\(frame.text)")
        }
        #expect(signature.frames[7...].map(\.role) == [.signature, .signature, .notNeeded])
    }

    @Test func sanitizerAndAllocatorFramesAreSkipped() {
        let signature = Self.signature([
            .unresolved("libclang_rt.asan-x86_64.so", 0x121776), Frame(module: "libasan.so.8", functions: ["__interceptor_free"]),
            Frame(module: "app", functions: ["__asan_memcpy"]), .libc("_int_free"), .libc("free"), .app("release"), .app("main"),
        ])
        #expect(signature.signature == "release | main")
        #expect(signature.frames[0].rule?.module?.text == "libclang_rt.*")
        #expect(signature.frames.prefix(5).allSatisfy { $0.role == .skipped })
    }

    @Test func languageRuntimeFailuresAreSkipped() {
        let cases: [[Frame]] = [
            // Swift: the runtime failure is an inline frame of the checking function.
            [Frame(module: "libswiftCore.so", functions: ["Swift._assertionFailure(_: Swift.StaticString, _: Swift.StaticString, file: Swift.StaticString, line: Swift.UInt, flags: Swift.UInt32) -> Swift.Never"]),
             .app("Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value", "crash.lookUp(_: Swift.String) -> Swift.Int"),
             .app("crash.total() -> Swift.Int")],
            // Rust panic machinery.
            [.libc("abort"), .app("std::sys::pal::unix::abort_internal"), .app("std::panicking::rust_panic_with_hook"),
             .app("std::panicking::begin_panic_handler::{{closure}}"), .app("core::panicking::panic_fmt"),
             .app("core::result::unwrap_failed"), .app("crash::lookUp::h0123456789abcdef"), .app("crash::total::hfedcba9876543210")],
            // C++ termination.
            [.libc("abort"), Frame(module: "libstdc++.so.6", functions: ["__gnu_cxx::__verbose_terminate_handler()"]),
             Frame(module: "libstdc++.so.6", functions: ["std::terminate()"]), Frame(module: "libstdc++.so.6", functions: ["__cxa_throw"]),
             .app("crash::lookUp(int)"), .app("crash::total()")],
        ]
        let expected = ["crash.lookUp | crash.total", "crash::lookUp | crash::total", "crash::lookUp | crash::total"]
        for (frames, expected) in zip(cases, expected) {
            #expect(Self.signature(frames).signature == expected)
        }
    }

    // MARK: Reporters and trampolines

    @Test func framesAboveTheTrampolineAreTheReporter() {
        let signature = Self.signature([.app("print_trace"), .app("on_signal"), .libc("__restore_rt"), .app("crasher"), .app("main")])
        #expect(signature.signature == "crasher | main")
        #expect(signature.frames.prefix(3).allSatisfy { $0.role == .reporter && $0.rule?.function?.text == "__restore_rt" })
    }

    @Test func glibcBacktraceFromAHandlerWithoutCLibrarySymbols() {
        let frames: [Frame] = [.app("on_signal"), .unresolved("libc.so.6", 0x3c050), .app("crasher"), .app("main"),
                               .unresolved("libc.so.6", 0x2724a)]
        let glibc = Self.signature(frames, signal: nil, format: .glibc)
        #expect(glibc.signature == "crasher | main")
        #expect(glibc.frames.map(\.role) == [.reporter, .trampoline, .signature, .signature, .notNeeded])
        #expect(glibc.title == "Crash in crasher")
        // Another format has no handler printing it: nothing is cut.
        #expect(Self.signature(frames, format: .euStack).signature == "on_signal | crasher")
        // backtrace() called outside a signal handler: the first libc frame is the process start.
        let plain = Self.signature([.app("dump_trace"), .app("main"), .unresolved("libc.so.6", 0x2724a)], format: .glibc)
        #expect(plain.signature == "dump_trace | main")
    }

    /// A glibc backtrace of a binary without symbols names its functions as the symbol table
    /// spells them (`prog(_Z4drawIiEvv+0x12)`): the signature and title read them demangled, the
    /// same as the frames symbolicated from a table would.
    @Test func unsymbolicatedGlibcNamesAreDemangled() throws {
        let text = """
            /opt/app/prog(_Z4drawIiEvv+0x12)[0x55b4268c9921]
            /opt/app/prog(_ZN5shape6renderEv+0x30)[0x55b4268c9980]
            /opt/app/prog(main+0x20)[0x55b4268c99a0]
            /lib/x86_64-linux-gnu/libc.so.6(+0x2724a)[0x7f7d1095e24a]

            """
        let parsed = try CrashReport.parse(text)
        #expect(parsed.format == .glibc)
        let none = SymbolSources(searchPaths: [], useModulePaths: false,
                                 locator: DebugFileLocator(debugDirectories: [], includeSystemDirectory: false), cacheDirectory: nil)
        let unsymbolicated = CrashSignature.compute(for: Symbolicator(sources: none).symbolicate(parsed))
        #expect(unsymbolicated.signature == "draw<int> | shape::render")
        #expect(unsymbolicated.title == "Crash in draw<int>")
        // c++filt's spelling, as a symbolicated frame's name.
        #expect(unsymbolicated.frames.prefix(2).map(\.function) == ["void draw<int>()", "shape::render()"])
        // The same functions found in a table: one group.
        let symbolicated = Self.signature([Frame(module: "prog", functions: ["void draw<int>()"]), .app("shape::render()"), .app("main"),
                                           .unresolved("libc.so.6", 0x2724a)], signal: nil, format: .glibc)
        #expect(symbolicated.signature == unsymbolicated.signature)
    }

    @Test func anOperatorNamesItsReporter() throws {
        let rules = try GroupingRules(document: #"{"rules":[{"action":"reporter","function":"crash_reporter::*"}]}"#)
        let frames: [Frame] = [.app("crash_reporter::write"), .app("crash_reporter::handle"), .unresolved("libc.so.6", 0x3c050),
                               .app("crasher"), .app("main")]
        let signature = Self.signature(frames, rules: rules, format: .euStack)
        #expect(signature.signature == "crasher | main")
        #expect(signature.frames[2].role == .trampoline)
        #expect(signature.frames[1].rule?.origin == .operator)
    }

    // MARK: App frames, libraries, context

    @Test func inlinedFramesCountAsFrames() {
        // `helper` inlined into `work`: two frames at one address.
        let signature = Self.signature([.app("helper", "work"), .app("main")])
        #expect(signature.signature == "helper | work")
        #expect(signature.contributingFrames.map(\.inlined) == [true, false])
        #expect(signature.contributingFrames.map(\.frameIndex) == [0, 0])
    }

    @Test func unresolvedAppFramesAreModuleAndOffset() {
        let signature = Self.signature([.unresolved("libvendor.so", 0x4a2f), .app("caller"), .app("main")])
        #expect(signature.signature == "libvendor.so+0x4a2f | caller")
    }

    @Test func unresolvedLibraryFramesAreLeftOut() {
        let signature = Self.signature([.unresolved("libc.so.6", 0x9d2f1), .app("caller"), .app("main")])
        #expect(signature.signature == "caller | main")
        #expect(signature.frames[0].role == .unresolvedLibrary)
    }

    /// Two bugs crash in the same library function: the app's frames keep them apart, and the
    /// library function shows as context.
    @Test func twoBugsThroughTheSameLibraryFunction() {
        let first = Self.signature([.libc("__memmove_avx_unaligned_erms"), .app("read_packet"), .app("serve"), .app("main")])
        let second = Self.signature([.libc("__memmove_evex_unaligned_erms"), .app("write_log"), .app("serve"), .app("main")])
        #expect(first.signature == "memmove | read_packet | serve")
        #expect(second.signature == "memmove | write_log | serve")
        #expect(first.contributingFrames.first?.isApp == false)
        // The same bug on a machine whose memmove variant differs: the same signature.
        let otherMachine = Self.signature([.libc("__memmove_sse2_unaligned_erms"), .app("read_packet"), .app("serve")])
        #expect(otherMachine.signature == first.signature)
    }

    @Test func onlyTheLibraryFunctionTheAppCalledIsContext() {
        let signature = Self.signature([.libc("__strlen_avx2"), .libc("__vfprintf_internal"), .libc("printf"), .app("report"), .app("main")])
        #expect(signature.signature == "printf | report | main")
        #expect(signature.frames.prefix(2).allSatisfy { $0.role == .libraryAboveContext })
    }

    @Test func standardLibraryCodeInsideTheAppIsALibrary() {
        let signature = Self.signature([
            .app("std::vector<int, std::allocator<int> >::operator[](unsigned long)", file: "/usr/include/c++/12/bits/stl_vector.h"),
            .app("std::__sort<int*>(int*, int*)"), .app("rank_players(std::vector<int>&)"), .app("main"),
        ])
        #expect(signature.signature == "std::__sort<int*> | rank_players | main")
        #expect(signature.frames[0].rule?.action == .library)
    }

    @Test func aStackWithoutAppFramesUsesWhatRan() {
        let signature = Self.signature([.unresolved("libc.so.6", 0x1234), .libc("start_thread"), .libc("clone3")])
        #expect(signature.signature == "start_thread | clone3")
        let nothing = Self.signature([.unresolved("libc.so.6", 0x1234), .libc("abort")])
        #expect(nothing.signature == "libc.so.6+0x1234")
    }

    @Test func recursionAndSplitFunctionsCollapse() {
        let signature = Self.signature([.app("walk"), .app("walk"), .app("walk"), .app("parse_header.part.0"), .app("parse_header"),
                                        .app("run")])
        #expect(signature.signature == "walk | parse_header")
        #expect(signature.frames[1].role == .repeated)
    }

    @Test func sanitizerAccessStackIsTheCrashingOne() {
        var report = Self.report([.app("use"), .app("main")], before: [])
        // The free and alloc stacks come after the access stack and are not crashed.
        report.report.stacks.append(ReportStack(name: "freed by", crashed: false, frames: report.report.stacks[0].frames))
        report.frames.append(report.frames[0].map { _ in FrameResolution(status: .ok, locations: [SourceLocation(function: "release", mangled: "", file: "", line: 0, column: 0)]) })
        #expect(CrashSignature.compute(for: report).signature == "use | main")
        #expect(CrashSignature.compute(for: report).stack == 0)
    }

    @Test func emptyReports() {
        let empty = CrashSignature.compute(for: SymbolicatedReport(report: CrashReport(format: .glibc), frames: []))
        #expect(empty.signature == CrashSignature.emptySignature && empty.stack == nil && empty.title == "Crash")
    }

    // MARK: The operator's rules

    @Test func operatorRulesComeFirst() throws {
        let rules = try GroupingRules(document: """
            {"version": 1, "app_frames": 1, "context_frames": 0, "rules": [
              {"action": "skip", "function": "log_fatal*", "note": "our logger aborts"},
              {"action": "app", "function": "malloc"},
              {"action": "library", "module": "libvendor*.so"}
            ]}
            """)
        let signature = Self.signature([.app("log_fatal_and_exit"), .libc("malloc"), .unresolved("libvendor2.so", 0x10), .app("main")], rules: rules)
        #expect(signature.signature == "malloc")
        #expect(signature.frames[0].role == .skipped && signature.frames[0].rule?.note == "our logger aborts")
        #expect(signature.frames[0].reason.contains("rule 0 of the app's rules"))
        #expect(signature.frames[1].isApp && signature.frames[1].rule?.index == 1)
        #expect(Self.signature([.libc("malloc"), .app("main")]).signature == "main")
    }

    @Test func signatureSerialisesForTheConsole() throws {
        let signature = Self.signature([.libc("abort"), .app("check"), .app("main")])
        let data = try JSONEncoder().encode(signature)
        let decoded = try JSONDecoder().decode(CrashSignature.self, from: data)
        #expect(decoded == signature)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"frames_not_examined\"") && text.contains("\"role\":\"skipped\"") && text.contains("\"is_app\""))
    }

    @Test func keptFormReadsBackWithoutFunctionsFilesAndLines() throws {
        let rules = try GroupingRules(document: #"{"rules": [{"action": "skip", "function": "log_\"fatal*", "module": "app", "note": "ours \n aborts"}]}"#)
        let signatures = [
            Self.signature([.libc("abort"), .app("check"), .app("main")]),
            Self.signature([.app("log_\"fatal_x"), .libc("malloc"), .unresolved("libvendor2.so", 0x10), .app("inl", "main")], rules: rules),
            Self.signature([]),
            Self.signature([Frame](repeating: .libc("abort"), count: 300)),
        ]
        for signature in signatures {
            let bytes = signature.keptBytes
            let read = try CrashSignature(keptBytes: bytes)
            #expect(read == signature.kept)
            #expect(read.frames.map(\.reason) == signature.frames.map(\.reason))
            #expect(read.frames.allSatisfy { $0.function == nil && $0.file == nil && $0.line == 0 })
            // Each rule once, however many frames it decided (300 aborts: one note).
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.components(separatedBy: #""note":"#).count - 1 == Set(signature.frames.compactMap(\.rule)).count,
                    "\(text.prefix(300))")
        }
        #expect(signatures[1].frames.contains { $0.rule?.origin == .operator })
        #expect(signatures[3].keptBytes.count < 300 * 80)
    }

    @Test func keptFormRefusesDamagedBytes() throws {
        let bytes = Self.signature([.libc("abort"), .app("check"), .app("main")]).keptBytes
        let text = String(decoding: bytes, as: UTF8.self)
        let damaged = [
            "", "[]", "{\"kept\":1}", text.replacingOccurrences(of: "\"kept\":2", with: "\"kept\":3"),
            text.replacingOccurrences(of: "\"skipped\"", with: "\"sideways\""),
            text.replacingOccurrences(of: ",0]", with: ",9]"),  // a rule position past the rules
            text.replacingOccurrences(of: "\"frames\":[[", with: "\"frames\":[[\"x\","),
        ]
        for bytes in damaged {
            #expect(throws: FormatError.self, "\(bytes.prefix(80))") { _ = try CrashSignature(keptBytes: Array(bytes.utf8)) }
        }
        // Truncated anywhere: an error, never a trap.
        for end in stride(from: 0, to: bytes.count, by: 7) {
            #expect(throws: FormatError.self) { _ = try CrashSignature(keptBytes: Array(bytes[..<end])) }
        }
    }

    /// A million frames: only the first `maximumFramesExamined` are looked at.
    @Test func hugeStacksAreBounded() {
        let frames = [Frame](repeating: .libc("abort"), count: 1_000_000)
        let signature = Self.signature(frames)
        #expect(signature.frames.count == CrashSignature.maximumFramesExamined)
        #expect(signature.framesNotExamined == 1_000_000 - CrashSignature.maximumFramesExamined)
        #expect(signature.signature == CrashSignature.emptySignature)
    }

    // MARK: The rules document

    @Test func documentRoundTrip() throws {
        let text = #"{"rules":[{"action":"skip","function":"log_\"q\"*","note":"line\nbreak"},{"action":"app","module":"/usr/lib/myapp/*","file":"*/src/*"}],"app_frames":3}"#
        let rules = try GroupingRules(document: text)
        #expect(rules.appFrames == 3 && rules.contextFrames == GroupingRules.defaultContextFrames && rules.operatorRules.count == 2)
        #expect(rules.operatorRules[1].module?.text == "/usr/lib/myapp/*")
        let again = try GroupingRules(document: rules.document)
        #expect(again == rules)
        #expect(again.document == rules.document)
        #expect(try GroupingRules(document: "{}") == .defaults)
        #expect(try GroupingRules(document: Array("{}".utf8)) == .defaults)
    }

    /// Hostile and wrong documents: each refused with its code and the place.
    @Test func invalidDocuments() {
        let cases: [(String, GroupingRulesError.Code, String)] = [
            ("", .invalidJSON, ""), ("{", .invalidJSON, ""), ("{\"rules\": []} x", .invalidJSON, ""), ("[]", .wrongType, ""),
            ("null", .wrongType, ""), (#"{"rules": {}}"#, .wrongType, "rules"), (#"{"rules": [1]}"#, .wrongType, "rules[0]"),
            (#"{"rules": [{"action": 1, "function": "a"}]}"#, .wrongType, "rules[0].action"),
            (#"{"rules": [{"action": "skip", "function": ["a"]}]}"#, .wrongType, "rules[0].function"),
            (#"{"rules": [{"action": "skip", "function": "a", "note": {}}]}"#, .wrongType, "rules[0].note"),
            (#"{"rules": [{"action": "drop", "function": "a"}]}"#, .invalidValue, "rules[0].action"),
            (#"{"rules": [{"function": "a"}]}"#, .invalidValue, "rules[0]"),
            (#"{"rules": [{"action": "skip"}]}"#, .invalidValue, "rules[0]"),
            (#"{"rules": [{"action": "skip", "function": ""}]}"#, .invalidValue, "rules[0].function"),
            (#"{"rules": [{"action": "skip", "function": "a\\"}]}"#, .invalidValue, "rules[0].function"),
            (#"{"rules": [{"action": "skip", "function": "a\u0001"}]}"#, .invalidValue, "rules[0].function"),
            (#"{"rules": [{"action": "skip", "function": "a", "regex": "b"}]}"#, .unknownMember, "rules[0].regex"),
            (#"{"rules": [{"action": "skip", "function": "a", "function": "b"}]}"#, .invalidValue, "rules[0].function"),
            (#"{"rule": []}"#, .unknownMember, "rule"), (#"{"rules": [], "rules": []}"#, .invalidValue, "rules"),
            (#"{"version": 2}"#, .invalidValue, "version"), (#"{"version": "1"}"#, .wrongType, "version"),
            (#"{"app_frames": 0}"#, .invalidValue, "app_frames"), (#"{"app_frames": 17}"#, .invalidValue, "app_frames"),
            (#"{"app_frames": 2.5}"#, .invalidValue, "app_frames"), (#"{"app_frames": -1}"#, .invalidValue, "app_frames"),
            (#"{"app_frames": 99999999999999999999999}"#, .invalidValue, "app_frames"),
            (#"{"context_frames": 9}"#, .invalidValue, "context_frames"), (#"{"context_frames": true}"#, .wrongType, "context_frames"),
            (String(repeating: "[", count: 100_000), .tooLarge, ""), (String(repeating: "[", count: 5_000), .invalidJSON, ""),
            ("{\"rules\": [" + Array(repeating: #"{"action":"skip","function":"a"}"#, count: 257).joined(separator: ",") + "]}", .tooLarge, "rules"),
            (#"{"rules": [{"action": "skip", "function": "\#(String(repeating: "a", count: 513))"}]}"#, .tooLarge, "rules[0].function"),
            (#"{"rules": [{"action": "skip", "function": "a", "note": "\#(String(repeating: "n", count: 1025))"}]}"#, .tooLarge, "rules[0].note"),
        ]
        for (text, code, path) in cases {
            do {
                _ = try GroupingRules(document: text)
                Issue.record("accepted: \(text.prefix(60))")
            } catch {
                #expect(error.code == code, "\(text.prefix(60)): \(error)")
                #expect(error.path == path, "\(text.prefix(60)): \(error)")
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test func invalidJSONNamesTheLine() {
        #expect(throws: GroupingRulesError.self) { try GroupingRules(document: "{\n\"rules\": [\n  {\"action\": skip}\n]}") }
        do {
            _ = try GroupingRules(document: "{\n\"rules\": [\n  {\"action\": skip}\n]}")
        } catch {
            #expect(error.description.contains("line 3"), "\(error)")
        }
        do {
            _ = try GroupingRules(document: [0x7b, 0xff, 0x7d])
        } catch {
            #expect(error.code == .invalidJSON && error.message.contains("UTF-8"))
        }
    }

    /// The built-in table's index answers what a plain scan of the table answers: for every
    /// pattern's own text and variations of it, as function, module and file.
    @Test func builtinIndexEqualsAScan() {
        var names: Set<String> = ["", "main", "libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "gfx_copy", "/usr/include/c++/12/vector"]
        for rule in GroupingRules.builtinRules {
            for pattern in [rule.function, rule.module, rule.file].compactMap({ $0 }) {
                let text = pattern.text
                names.formUnion([text, text.replacingOccurrences(of: "*", with: ""), text.replacingOccurrences(of: "*", with: "x::y"),
                                 text.replacingOccurrences(of: "?", with: "a"), text + "x", "x" + text, String(text.dropLast())])
            }
        }
        // Twice: the second round is answered from the remembered matches (nil and "" apart).
        for name in Array(names) + Array(names) {
            for (function, module, path, file) in [(name, "app", "/opt/app", "/src/a.c"), (name, name, name, name), ("main", name, "/opt/" + name, ""),
                                                   ("main", "app", name, ""), ("main", "app", "/opt/app", name)] {
                let indexed = GroupingRules.defaults.rule(function: function, moduleName: module, modulePath: path, file: file)
                let scanned = GroupingRules.firstBuiltinByScan(function: function, moduleName: module, modulePath: path, file: file)
                #expect(indexed == scanned, "\(function) \(module) \(path) \(file)")
            }
            #expect(GroupingRules.defaults.rule(function: nil, moduleName: name, modulePath: nil, file: nil)
                == GroupingRules.firstBuiltinByScan(function: nil, moduleName: name, modulePath: nil, file: nil))
            #expect(GroupingRules.defaults.rule(function: name, moduleName: nil, modulePath: nil, file: nil)
                == GroupingRules.firstBuiltinByScan(function: name, moduleName: nil, modulePath: nil, file: nil))
        }
    }

    /// Every built-in rule compiled (a typo in the table would leave a rule matching everything).
    @Test func builtinTableIsWellFormed() {
        #expect(GroupingRules.builtinRules.count > 100)
        for (index, rule) in GroupingRules.builtinRules.enumerated() {
            #expect(rule.function != nil || rule.module != nil || rule.file != nil, "rule \(index)")
            #expect(rule.index == index && rule.origin == .builtin && !rule.note.isEmpty)
        }
    }
}
