extension ConsoleReportView {
    /// The view of what a Crashpad/Breakpad client sent with a minidump: the product, the
    /// annotations sorted by name, the attachments. Mustache escapes every value (`{{…}}`).
    static func minidump(_ details: CrashStore.MinidumpDetails) -> [String: Any] {
        [
            "product": details.product as Any,
            // Why the crash's version is not the ver annotation as sent.
            "versionNote": details.versionNote as Any,
            "annotations": details.annotations.sorted { $0.key < $1.key }.map { ["key": $0.key, "value": $0.value] },
            "attachments": details.attachments.enumerated().map { index, attachment -> [String: Any] in
                ["index": index, "filename": attachment.filename, "size": attachment.size, "contentType": attachment.contentType as Any]
            },
        ]
    }
}
