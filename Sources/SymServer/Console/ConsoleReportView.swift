import Foundation

/// A stored crash (its summary and the engine's JSON report, docs/crash-report.md) as the
/// `report` template's data: the header facts, each stack's frames with inlined frames under
/// their physical frame, and the modules.
enum ConsoleReportView {
    /// The template data; `modules` ([[String: String]]) and `buildIDs` ([String]) for the
    /// crash page's module table.
    static func report(summary: CrashStore.CrashSummary, report: [UInt8]?, link: Bool, appID: String) -> [String: Any] {
        let document = report.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] } ?? [:]
        var facts: [(String, String?)] = [
            ("Signal", summary.signal ?? document["signal"] as? String),
            ("Reason", document["reason"] as? String),
            ("Version", summary.version), ("Host", summary.host), ("System", summary.system),
            ("Environment", summary.environment),
            ("Received", summary.received), ("Symbolicated", summary.lastSymbolicated),
            ("Format", summary.format), ("State", summary.state.rawValue),
        ]
        if link { facts.insert(("Crash", summary.id), at: 0) }
        if let metadata = document["metadata"] as? [String: Any] {
            for key in metadata.keys.sorted() { facts.append((key, metadata[key].map { "\($0)" })) }
        }
        let modules = (document["modules"] as? [[String: Any]]) ?? []
        let stacks = ((document["stacks"] as? [[String: Any]]) ?? []).enumerated().map { index, stack -> [String: Any] in
            let name = (stack["name"] as? String) ?? (stack["thread"] as? String).map { "Thread \($0)" } ?? "Stack \(index + 1)"
            return ["name": name, "crashed": (stack["crashed"] as? Bool) ?? false,
                    "rows": ((stack["frames"] as? [[String: Any]]) ?? []).flatMap(rows(of:))]
        }
        var moduleRows: [[String: String]] = []
        var buildIDs: [String] = []
        for module in modules {
            let buildID = module["build_id"] as? String ?? ""
            if !buildID.isEmpty { buildIDs.append(buildID) }
            moduleRows.append(["name": module["name"] as? String ?? "", "path": module["path"] as? String ?? "",
                               "buildID": buildID, "load": module["load_address"] as? String ?? ""])
        }
        var data: [String: Any] = [
            "facts": facts.compactMap { label, value in value.map { ["label": label, "value": $0] } },
            "stacks": stacks, "modules": moduleRows, "buildIDs": buildIDs,
        ]
        if link { data["crashLink"] = "/apps/\(appID)/crashes/\(summary.id)" }
        return data
    }

    /// A frame's rows: the physical function, then each function inlined into it (innermost
    /// first, as the stack reads), indented; an unresolved frame says why.
    static func rows(of frame: [String: Any]) -> [[String: Any]] {
        let index = (frame["index"] as? Int).map(String.init) ?? ""
        let module = frame["module"] as? String ?? ""
        let status = frame["status"] as? String ?? ""
        let chain = (frame["symbolized"] as? [[String: Any]]) ?? []
        func location(_ entry: [String: Any]) -> String {
            let file = entry["file"] as? String ?? ""
            let line = entry["line"] as? Int ?? 0
            return file.isEmpty ? "" : line > 0 ? "\(file):\(line)" : file
        }
        guard let physical = chain.last else {
            let offset = frame["module_offset"] as? String ?? frame["address"] as? String ?? ""
            return [["index": index, "module": module, "function": module.isEmpty ? offset : "\(module)+\(offset)",
                     "location": "", "status": status, "reason": frame["reason"] as? String as Any, "inlined": false,
                     "rowClass": "unresolved"]]
        }
        var rows: [[String: Any]] = [[
            "index": index, "module": module, "function": physical["function"] as? String ?? "??", "location": location(physical),
            "status": status, "reason": frame["reason"] as? String as Any, "inlined": false,
            "rowClass": status == "ok" ? "physical" : "unresolved",
        ]]
        for entry in chain.dropLast() {
            rows.append(["index": "", "module": "", "function": entry["function"] as? String ?? "??", "location": location(entry),
                         "status": "", "inlined": true, "rowClass": "inlined"])
        }
        return rows
    }
}
