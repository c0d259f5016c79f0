import Foundation

/// A receiver of an app's group notifications (docs/webhooks.md): where to post, which events,
/// in which body format, signed with which secret. The secret is stored as given (it keys the
/// HMAC) and never shown again: `hasSecret` says whether there is one.
public struct Webhook: Sendable, Equatable {
    /// What happened to a group.
    public enum Event: String, Sendable, Codable, CaseIterable {
        /// The first crash of a group.
        case groupNew = "group.new"
        /// A crash of a newer version than the one a resolved group was resolved in.
        case regression = "group.regression"
        /// A group's last hour reached the spike rule (`--spike-factor`, `--spike-min`).
        case spike = "group.spike"

        /// The event of a name: `group.new` or the command line's `new-group` (and so on).
        public init?(name: String) {
            switch name.trimmingCharacters(in: .whitespaces) {
            case "group.new", "new-group", "new": self = .groupNew
            case "group.regression", "regression": self = .regression
            case "group.spike", "spike": self = .spike
            default: return nil
            }
        }
    }

    /// The body format of a delivery.
    public enum Format: String, Sendable, Codable, CaseIterable {
        /// The event object of docs/webhooks.md.
        case json
        /// `{"text": …}` for Slack-compatible incoming webhooks (Mattermost, Rocket.Chat).
        case slack
    }

    /// A webhook to create: checked by `validated(allowPrivate:)` before it is stored.
    public struct New: Sendable {
        public var appID: String
        public var url: String
        public var events: [Event]
        public var secret: String?
        public var format: Format

        /// Creates a request; every event when `events` is empty.
        public init(appID: String, url: String, events: [Event] = Event.allCases, secret: String? = nil, format: Format = .json) {
            self.appID = appID
            self.url = url
            self.events = events.isEmpty ? Event.allCases : events
            self.secret = secret
            self.format = format
        }

        /// The request with its URL checked (`WebhookAddress`) and its events in canonical order;
        /// errors are `ServerError(.badRequest)` with the reason.
        public func validated(allowPrivate: Bool) throws -> New {
            var copy = self
            copy.url = try WebhookAddress.check(url, allowPrivate: allowPrivate)
            copy.events = Event.allCases.filter(events.contains)
            if let secret {
                guard !secret.isEmpty, secret.utf8.count <= 256 else {
                    throw ServerError(.badRequest, "the secret must be 1 to 256 bytes")
                }
            }
            return copy
        }
    }

    public var id: String
    public var appID: String
    public var url: String
    public var events: [Event]
    public var format: Format
    /// Whether deliveries are signed (`X-Crashsym-Signature`).
    public var hasSecret: Bool
    /// When it was created (RFC 3339).
    public var created: String

    /// Parses a comma-separated event list (`new-group,regression,spike` or `group.new,…`).
    public static func events(_ list: String) throws -> [Event] {
        try list.split(separator: ",").map { name in
            guard let event = Event(name: String(name)) else {
                throw ServerError(.badRequest, "unknown event \"\(name.prefix(40))\" (known: new-group, regression, spike)")
            }
            return event
        }
    }
}

extension Webhook: Codable {
    enum CodingKeys: String, CodingKey {
        case id, url, events, format, created
        case appID = "app_id", hasSecret = "has_secret"
    }
}

/// The one check of a webhook's URL: `http` or `https`, a host, no credentials in it, and not an
/// address that would let an app key holder reach the server's own network: link-local and cloud
/// metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::/32) are always refused, private
/// ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) unless allowed; loopback is allowed
/// (local receivers, tests). A host name is resolved and each of its addresses checked.
public enum WebhookAddress {
    /// The URL, unchanged, when it may be used; else `ServerError(.badRequest)` saying why.
    public static func check(_ text: String, allowPrivate: Bool) throws -> String {
        guard text.utf8.count <= 2048 else { throw ServerError(.badRequest, "the URL is longer than 2048 bytes") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw ServerError(.badRequest, "\"\(text.prefix(80))\" is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw ServerError(.badRequest, "the URL must be http or https, not \(scheme.prefix(20))")
        }
        guard let host = components.host, !host.isEmpty else { throw ServerError(.badRequest, "the URL has no host") }
        guard components.user == nil && components.password == nil else {
            throw ServerError(.badRequest, "the URL must not hold a user or password (use --secret to sign deliveries)")
        }
        if let reason = refusal(host: host, allowPrivate: allowPrivate) { throw ServerError(.badRequest, reason) }
        return text
    }

    /// Why deliveries to `host` are refused, nil when they are not (its addresses are looked up;
    /// a name that does not resolve now is accepted, and checked again at each delivery).
    public static func refusal(host: String, allowPrivate: Bool) -> String? {
        if case .refused(let reason) = vet(host: host, allowPrivate: allowPrivate) { return reason }
        return nil
    }

    /// What a lookup of `host` allows: the addresses it resolved to, all checked, or why not.
    enum Verdict: Equatable {
        case allowed([Address])
        case refused(String)
    }

    /// Looks `host` up once and checks every address it gives (an empty list when it does not
    /// resolve). A delivery then connects to exactly these addresses (`pin`), so a name that
    /// answers differently the second time (DNS rebinding) cannot lead libcurl elsewhere.
    static func vet(host: String, allowPrivate: Bool) -> Verdict {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let found = addresses(of: bare)
        for address in found {
            switch classify(address) {
            case .linkLocal: return .refused("\(host) is a link-local or cloud metadata address (\(address.text)): refused")
            case .private where !allowPrivate:
                return .refused("\(host) is a private address (\(address.text)): refused unless the server runs with --webhook-allow-private")
            default: continue
            }
        }
        return .allowed(found)
    }

    /// The `CURLOPT_RESOLVE` entry that makes libcurl connect to `addresses` for `host:port`.
    static func pin(host: String, port: Int, addresses: [Address]) -> String {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let name = bare.contains(":") ? "[\(bare)]" : bare
        let list = addresses.map { $0.bytes.count == 16 ? "[\($0.text)]" : $0.text }
        return "\(name):\(port):" + list.joined(separator: ",")
    }

    enum Kind { case loopback, linkLocal, `private`, `public` }

    struct Address: Equatable {
        var bytes: [UInt8]
        var text: String
    }

    static func classify(_ address: Address) -> Kind {
        let b = address.bytes
        if b.count == 4 {
            switch (b[0], b[1]) {
            case (127, _): return .loopback
            case (169, 254): return .linkLocal
            case (10, _), (192, 168): return .private
            case (172, 16...31), (100, 64...127): return .private
            case (0, _): return .private
            default: return .public
            }
        }
        guard b.count == 16 else { return .public }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopback }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff {
            return classify(Address(bytes: Array(b[12..<16]), text: address.text))  // IPv4-mapped
        }
        if b[0] == 0xfd && b[1] == 0x00 && b[2] == 0x0e && b[3] == 0xc2 { return .linkLocal }  // fd00:ec2::/32
        if b[0] == 0xfe && (b[1] & 0xc0) == 0x80 { return .linkLocal }  // fe80::/10
        if (b[0] & 0xfe) == 0xfc { return .private }  // fc00::/7
        return .public
    }

    /// The IPv4 and IPv6 addresses of `host` (a literal, or a name through getaddrinfo).
    static func addresses(of host: String) -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var result: [Address] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let socketAddress = current.pointee.ai_addr {
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
                if current.pointee.ai_family == AF_INET {
                    var raw = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    let bytes = withUnsafeBytes(of: &raw) { Array($0) }
                    inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                    result.append(Address(bytes: bytes, text: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
                } else if current.pointee.ai_family == AF_INET6 {
                    var raw = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    let bytes = withUnsafeBytes(of: &raw) { Array($0) }
                    inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                    result.append(Address(bytes: bytes, text: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
                }
            }
            entry = current.pointee.ai_next
        }
        return result
    }
}
