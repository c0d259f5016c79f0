import Foundation
import SymReport
import Testing
@testable import Symbolication

/// Grouping on real crashes (Fixtures/grouping): the same bug lands in one group whatever the
/// build, process, version or inlining; different bugs, also two that crash in the same library
/// function, land in different groups.
@Suite struct GroupingFixtureTests {
    /// What a person reading the code calls each bug: the function that crashed (or failed its
    /// check) and the app function whose mistake it was.
    static let expected = [
        "header": "gfx_copy | parse_header",
        "config": "gfx_copy | load_config",
        "assert": "validate_order | run_command",
        "null": "count_items | summarize",
        "uaf": "touch_session | run_command",
    ]

    static func signature(_ report: GroupingFixtures.Report, rules: GroupingRules = .defaults,
                          withSystemSymbols: Bool = false) throws -> CrashSignature {
        CrashSignature.compute(for: try GroupingFixtures.symbolicated(report, withSystemSymbols: withSystemSymbols), rules: rules)
    }

    @Test func fixturesCoverEveryBugInSeveralBuilds() {
        for bug in GroupingFixtures.bugs {
            let builds = Set(GroupingFixtures.reports.filter { $0.bug == bug }.map(\.build))
            #expect(builds.count >= 3, "\(bug): \(builds.sorted())")
            #expect(builds.contains { $0.hasPrefix("v1-") } && builds.contains { $0.hasPrefix("v2-") }, "\(bug): both versions")
            #expect(builds.contains { $0.contains("nopie") }, "\(bug): a non-PIE build")
        }
        // The same bug in two processes (other load addresses).
        #expect(GroupingFixtures.reports.filter { $0.file.contains("-run2") }.count >= 4)
    }

    @Test(arguments: GroupingFixtures.reports)
    func reportGetsItsBugsSignature(_ report: GroupingFixtures.Report) throws {
        let signature = try Self.signature(report)
        #expect(signature.signature == Self.expected[report.bug], "\(report.file)")
        // Every frame of the signature resolved to a name from the build's own debug info.
        for frame in signature.contributingFrames {
            #expect(frame.function != nil && frame.isApp, "\(report.file): \(frame.text)")
        }
    }

    /// Both directions over every pair of reports: same bug ⇔ same signature.
    @Test func sameBugSameGroupDifferentBugsDifferentGroups() throws {
        let signatures = try GroupingFixtures.reports.map { ($0, try Self.signature($0).signature) }
        for (left, leftSignature) in signatures {
            for (right, rightSignature) in signatures {
                if left.bug == right.bug {
                    #expect(leftSignature == rightSignature, "\(left.file) and \(right.file) are the same bug")
                } else {
                    #expect(leftSignature != rightSignature, "\(left.file) and \(right.file) are different bugs")
                }
            }
        }
        // The two gfx bugs crash in the same library function and still differ.
        let header = signatures.filter { $0.0.bug == "header" }, config = signatures.filter { $0.0.bug == "config" }
        #expect(header.allSatisfy { $0.1.hasPrefix("gfx_copy | ") } && config.allSatisfy { $0.1.hasPrefix("gfx_copy | ") })
    }

    /// The -O2 builds inline count_items into summarize: the inline frame still counts.
    @Test func inlinedFramesCountAsFrames() throws {
        let inlined = try GroupingFixtures.reports.filter { $0.bug == "null" }.map { try Self.signature($0) }
            .filter { $0.contributingFrames.first?.inlined == true }
        #expect(!inlined.isEmpty, "some optimised build inlined count_items")
        for signature in inlined {
            #expect(signature.contributingFrames.map(\.text) == ["count_items", "summarize"])
            #expect(signature.contributingFrames[0].frameIndex == signature.contributingFrames[1].frameIndex)
        }
    }

    /// A glibc backtrace printed from the app's SIGABRT handler: the handler and the trampoline
    /// above the interrupted stack are the reporter; abort's frames are skipped, each with its rule.
    @Test func assertFromSignalHandlerExplainsEveryFrame() throws {
        let report = try #require(GroupingFixtures.reports.first { $0.file == "v1-gcc-O2-assert.txt" })
        let signature = try Self.signature(report)
        #expect(signature.title == "Crash in validate_order")
        #expect(signature.frames.first?.text == "on_fatal_signal")
        #expect(signature.frames.first?.role == .reporter)
        #expect(signature.frames[1].role == .trampoline)
        let skipped = signature.frames.filter { $0.role == .skipped }
        #expect(skipped.map(\.text).contains("abort"))
        #expect(skipped.allSatisfy { $0.rule?.action == .skip && $0.rule?.origin == .builtin })
        #expect(signature.contributingFrames.map(\.text) == ["validate_order", "run_command"])
        // Nothing between the trampoline and validate_order is part of the signature.
        let first = try #require(signature.frames.firstIndex { $0.role == .signature })
        #expect(signature.frames[2..<first].allSatisfy { [.skipped, .unresolvedLibrary].contains($0.role) })
        #expect(signature.frames[(first + 2)...].allSatisfy { $0.role == .notNeeded })
    }

    /// ASan reports name their kind: the title says it.
    @Test func sanitizerTitle() throws {
        let report = try #require(GroupingFixtures.reports.first { $0.file == "v2-clang-O2-asan-uaf.txt" })
        #expect(try Self.signature(report).title == "heap-use-after-free in touch_session")
    }

    /// An operator's rule changes the signature: with gfx_copy declared a library, it becomes
    /// context (the library function the app called) and the app's frames move up.
    @Test func operatorRuleMakesALibrary() throws {
        let rules = try GroupingRules(document: #"{"rules": [{"action": "library", "module": "libgfx.so"}]}"#)
        for report in GroupingFixtures.reports where report.bug == "header" {
            let signature = try Self.signature(report, rules: rules)
            #expect(signature.signature == "gfx_copy | parse_header | run_command", "\(report.file)")
            #expect(signature.contributingFrames.first?.isApp == false)
            #expect(signature.contributingFrames.first?.role == .signature)
        }
    }

    /// With the C library's symbols (libc6-dbg), the same signatures: frames of abort now have
    /// names, and the skip rules name the rule that skipped each.
    @Test func cLibrarySymbolsChangeNoSignature() throws {
        let debugFile = try #require(Corpus.libcDebugFile, "libc6-dbg is not installed (scripts/deps installs it)")
        let asanReport = try String(contentsOfFile: GroupingFixtures.directory + "/reports/v1-clang-O1-asan-assert.txt", encoding: .utf8)
        // `.build-id/93/ac61….debug`: the C library's build-id.
        let parts = debugFile.split(separator: "/").suffix(2)
        let machineLibc = parts.first.map(String.init)! + String(parts.last!.dropLast(".debug".count))
        #expect(asanReport.contains(machineLibc), "the fixtures were captured with another C library: rerun scripts/build-grouping-fixtures")
        // Two builds (a glibc handler's reports and ASan's): the C library is converted once per
        // Symbolicator, which takes seconds.
        for build in ["v1-gcc-O2", "v2-clang-O2-asan"] {
            let reports = GroupingFixtures.reports.filter { $0.build == build }
            let symbolicator = Symbolicator(sources: GroupingFixtures.sources(for: try #require(reports.first), withSystemSymbols: true))
            for report in reports {
                let text = try String(contentsOfFile: GroupingFixtures.directory + "/reports/" + report.file, encoding: .utf8)
                let signature = CrashSignature.compute(for: symbolicator.symbolicate(try CrashReport.parse(text)))
                #expect(signature.signature == Self.expected[report.bug], "\(report.file)")
                if report.bug == "assert" {
                    let names = Set(signature.skippedFrames.filter { $0.role == .skipped }.map(\.text))
                    #expect(names.isSuperset(of: ["abort", "raise", "__assert_fail", "__assert_fail_base", "__pthread_kill_implementation"]),
                            "\(report.file): \(names.sorted())")
                }
                if !build.contains("asan") {
                    // The handler's frames are the reporter's, down to the signal trampoline: named
                    // __restore_rt now that the engine looks it up at its exact pc (a reporter
                    // rule's frame), or a nameless libc frame (the trampoline role).
                    let trampoline = try #require(signature.frames.firstIndex { $0.role == .trampoline || $0.function == "__restore_rt" },
                                                  "\(report.file)")
                    #expect(trampoline > 0 && signature.frames[..<trampoline].allSatisfy { $0.role == .reporter }, "\(report.file)")
                    #expect(signature.frames[trampoline].role != .signature)
                }
            }
        }
    }
}
