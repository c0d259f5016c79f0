import SymReport

/// The signature and title of a symbolicated crash, under the app's grouping rules.
///
/// The one place processing asks for a signature. The rules themselves (docs/grouping.md) are
/// the grouping module's; until it is merged, this takes the crashing stack's first three
/// frames (inlined frames counted, unresolved ones as `module+0xoffset`) after skipping the
/// obvious reporter and runtime frames.
enum CrashSignature {
    static func compute(_ result: SymbolicatedReport, rules: String?) -> (signature: String, title: String) {
        let report = result.report
        let stackIndex = report.stacks.firstIndex(where: \.crashed) ?? 0
        var parts: [String] = []
        if stackIndex < report.stacks.count {
            let stack = report.stacks[stackIndex]
            for (index, frame) in stack.frames.enumerated() where parts.count < 3 {
                let resolution = result.frames[stackIndex][index]
                if resolution.status == .ok, !resolution.locations.isEmpty {
                    for location in resolution.locations where parts.count < 3 && !isNoise(location.function) {
                        parts.append(location.function)
                    }
                } else {
                    let module = frame.module.flatMap { $0 < report.modules.count ? report.modules[$0].name : nil } ?? "??"
                    let offset = resolution.moduleAddress ?? frame.moduleOffset
                    parts.append(offset.map { "\(module)+0x\(String($0, radix: 16))" } ?? module)
                }
            }
        }
        let signature = parts.isEmpty ? "<no frames>" : parts.joined(separator: " | ")
        let title = (report.signal.map { $0 + ": " } ?? "") + (parts.first ?? "<no frames>")
        return (signature, title)
    }

    private static let noisePrefixes = [
        "abort", "raise", "__GI_", "pthread_kill", "__pthread_kill", "gsignal", "__restore_rt", "__assert_fail",
        "__asan", "__sanitizer", "__interceptor", "__ubsan", "__tsan", "__lsan", "std::terminate", "__cxa_throw",
    ]

    private static func isNoise(_ function: String) -> Bool {
        noisePrefixes.contains { function.hasPrefix($0) }
    }
}
