import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore

/// The HTTP side of the console: rendering pages into responses with their security headers,
/// cookies, form bodies and CSRF checks.
struct ConsoleRenderer: Sendable {
    /// The compiled templates (compiled once per process).
    static let shared = ConsoleRenderer()

    let library: MustacheLibrary
    /// `/static/console-<first 16 hex digits of the SHA-256>.css`: a new style sheet gets a new
    /// name, so the old one may be cached for a year.
    let stylesheetPath: String
    let stylesheet: [UInt8]

    private init() {
        var library = MustacheLibrary()
        let templates: [(String, String)] = [
            ("layout", ConsoleTemplates.layout), ("signin", ConsoleTemplates.signIn), ("apps", ConsoleTemplates.apps),
            ("groups", ConsoleTemplates.groups), ("group", ConsoleTemplates.group), ("report", ConsoleTemplates.report),
            ("crash", ConsoleTemplates.crash), ("symbols", ConsoleTemplates.symbols), ("message", ConsoleTemplates.message),
            ("webhooks", ConsoleTemplates.webhooks),
        ]
        for (name, text) in templates {
            // The templates are constants of this file's module: a parse error is a programming
            // error that every console test would show.
            do { try library.register(text, named: name) } catch { preconditionFailure("console template \(name): \(error)") }
        }
        self.library = library
        stylesheet = Array(ConsoleTemplates.stylesheet.utf8)
        let digest = SHA256.hash(data: stylesheet).prefix(8).map { String(format: "%02x", $0) }.joined()
        stylesheetPath = "/static/console-\(digest).css"
    }

    /// Renders `template` with `data` (absent optionals removed first: swift-mustache would
    /// print an `Optional.none` inside `Any` as "nil").
    func render(_ template: String, _ data: [String: Any]) -> String {
        library.render(Self.removingAbsent(data) ?? [:], withTemplate: template) ?? ""
    }

    /// `value` with every `nil` removed from its dictionaries and arrays, or nil when it is nil.
    static func removingAbsent(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return nil }
            return removingAbsent(wrapped)
        }
        if let dictionary = value as? [String: Any] { return dictionary.compactMapValues(removingAbsent) }
        if let array = value as? [[String: Any]] { return array.compactMap(removingAbsent) }
        return value
    }

    /// A whole page: `template` with `data`, inside the layout with the person's menu.
    func page(_ template: String, title: String, data: [String: Any], session: CrashStore.ConsoleSession?,
              crumbs: [(label: String, href: String)] = [], status: HTTPResponse.Status = .ok) -> Response {
        let body = render(template, data)
        var layout: [String: Any] = [
            "title": title, "stylesheet": stylesheetPath, "body": body,
            "crumbs": crumbs.map { ["label": $0.label, "href": $0.href] }, "hasCrumbs": !crumbs.isEmpty,
        ]
        if let session { layout["user"] = ["name": session.user, "admin": session.admin, "csrf": session.csrf] as [String: Any] }
        return Self.html(render("layout", layout), status: status)
    }

    /// An HTML response with the console's headers: a strict CSP (no script at all, styles and
    /// images only from this origin, forms only to it, no framing), no sniffing, no caching.
    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        addSecurityHeaders(&headers)
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The headers every console response carries.
    static func addSecurityHeaders(_ headers: inout HTTPFields) {
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
    }

    /// 303 to `location` (after a form, or to the sign-in page).
    static func redirect(_ location: String, cookies: [Cookie] = []) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        addSecurityHeaders(&headers)
        headers[.cacheControl] = "no-store"
        var response = Response(status: .seeOther, headers: headers)
        for cookie in cookies { response.setCookie(cookie) }
        return response
    }
}

/// A form body (`application/x-www-form-urlencoded`), at most 64 KiB.
struct ConsoleForm {
    var fields: [String: String] = [:]
    /// Every name and value in order (a checkbox group sends one name many times).
    var pairs: [(name: String, value: String)] = []

    static let maximumBytes = 64 << 10

    init(_ request: Request) async throws {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maximumBytes)
        } catch {
            throw ConsoleFailure(.contentTooLarge, "The form is over 64 KiB.")
        }
        self.init(text: String(buffer: buffer))
    }

    /// The query string of a URL, decoded as a GET form's (`+` is a space; Hummingbird's
    /// `queryParameters` keeps it a plus).
    init(query request: Request) {
        self.init(text: request.uri.query ?? "")
    }

    init(text: String) {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { continue }
            let value = parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""
            fields[name] = value
            pairs.append((name, value))
        }
    }

    subscript(_ name: String) -> String? { fields[name] }

    /// Every value sent under `name`, in order.
    func values(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

/// A console request that ends in an HTML error page.
struct ConsoleFailure: Error {
    var status: HTTPResponse.Status
    var message: String
    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// A page that needs a session was asked for without one: 303 to the sign-in page.
struct ConsoleRedirect: Error {
    var location: String
}

/// Compares two tokens in time that depends only on their lengths.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    guard x.count == y.count else { return false }
    var difference: UInt8 = 0
    for index in x.indices { difference |= x[index] ^ y[index] }
    return difference == 0
}
