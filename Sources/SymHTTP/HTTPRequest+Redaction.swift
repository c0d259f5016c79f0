extension HTTPRequest {
    /// `url` with the password of its user information replaced by `***`
    /// (`https://ci:secret@host/` → `https://ci:***@host/`), for every line that names a URL: a
    /// password given in `--server` must not reach logs.
    public static func redacting(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let authorityStart = scheme.upperBound
        let authorityEnd = url[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        let authority = url[authorityStart..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return url }
        let userInfo = authority[..<at]
        let user = userInfo.firstIndex(of: ":").map { userInfo[..<$0] + ":***" } ?? userInfo
        return String(url[..<authorityStart]) + user + String(url[at...])
    }
}
