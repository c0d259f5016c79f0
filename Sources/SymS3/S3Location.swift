import SymHTTP

/// Where objects live in an S3-compatible store: `s3://bucket/prefix?endpoint=http://host:port&region=…`.
///
/// Requests use path-style URLs (`<endpoint>/<bucket>/<key>`), which every S3-compatible store
/// accepts (SeaweedFS, MinIO, Ceph) and AWS still serves; without `endpoint` the AWS regional
/// endpoint is used.
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    /// The bucket (3 to 63 characters: lower-case letters, digits, dots, dashes).
    public var bucket: String
    /// Prepended to every key: empty, or ending with "/".
    public var prefix: String
    /// `http://host:port` or `https://host`, without a trailing slash.
    public var endpoint: String
    /// The signing region (default `us-east-1`).
    public var region: String

    /// Creates a location from its parts.
    public init(bucket: String, prefix: String = "", endpoint: String, region: String = "us-east-1") {
        self.bucket = bucket
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.region = region
    }

    /// Parses `s3://bucket/prefix?endpoint=…&region=…`; the error says what is wrong.
    public init(parsing text: String) throws(S3Error) {
        guard text.hasPrefix("s3://") else {
            throw S3Error(.configuration, "\(text.prefix(80)): an object store URL starts with s3:// (s3://bucket/prefix?endpoint=http://host:port&region=…)")
        }
        var rest = Substring(text.dropFirst(5))
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        let bucket = rest.prefix { $0 != "/" }
        let prefix = rest.dropFirst(bucket.count).drop { $0 == "/" }
        guard Self.isBucketName(bucket) else {
            throw S3Error(.configuration, "\"\(bucket.prefix(80))\" is not a bucket name (3 to 63 lower-case letters, digits, dots and dashes)")
        }
        guard prefix.utf8.allSatisfy({ PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: "/") }), !prefix.contains("//") else {
            throw S3Error(.configuration, "the key prefix \"\(prefix.prefix(80))\" may hold only letters, digits, - _ . ~ and single slashes")
        }
        var endpoint: String?
        var region = "us-east-1"
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let name = pair.prefix { $0 != "=" }
            let value = String(pair.dropFirst(name.count + 1))
            switch name {
            case "endpoint": endpoint = value
            case "region": region = value
            default: throw S3Error(.configuration, "unknown object store parameter \"\(name.prefix(40))\" (known: endpoint, region)")
            }
        }
        guard !region.isEmpty, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw S3Error(.configuration, "region \"\(region.prefix(40))\" is not a region name such as us-east-1")
        }
        var resolved = endpoint ?? "https://s3.\(region).amazonaws.com"
        if resolved.hasSuffix("/") { resolved.removeLast() }
        let host = resolved.hasPrefix("https://") ? resolved.dropFirst(8) : resolved.hasPrefix("http://") ? resolved.dropFirst(7) : ""
        guard !host.isEmpty, host.allSatisfy({ $0 != "/" && $0 != "?" && $0 != "#" && $0 != "@" && $0 != " " }) else {
            throw S3Error(.configuration, "endpoint \"\(resolved.prefix(80))\" must be http://host:port or https://host (no path)")
        }
        self.init(bucket: String(bucket), prefix: String(prefix), endpoint: resolved, region: region)
    }

    /// Whether `name` is a bucket name S3 accepts for path-style requests.
    static func isBucketName(_ name: Substring) -> Bool {
        (3...63).contains(name.count) && name.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "-" }
            && name.first != "." && name.first != "-" && name.last != "." && name.last != "-"
    }

    /// `s3://bucket/prefix?endpoint=…&region=…`.
    public var description: String {
        "s3://\(bucket)/\(prefix)?endpoint=\(endpoint)&region=\(region)"
    }
}

/// The credentials requests are signed with.
public struct S3Credentials: Sendable {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// A temporary session's token (`x-amz-security-token`).
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The standard `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    public static func fromEnvironment(_ environment: [String: String]) throws(S3Error) -> S3Credentials {
        guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty,
              let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
            throw S3Error(.configuration, "an s3:// object store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
        }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token)
    }
}
