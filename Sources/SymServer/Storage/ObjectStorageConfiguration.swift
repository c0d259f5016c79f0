import Foundation
import Logging
import SymS3

/// Where objects live: the directory under `--data-dir` (default) or an S3-compatible bucket
/// (`--object-store s3://bucket/prefix?endpoint=…&region=…`, credentials from the standard
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), with the node-local cache
/// of tables fetched from the bucket and the sweeper's grace period.
public struct ObjectStorageConfiguration: Sendable, Equatable {
    /// The S3 location; nil: the directory under the data directory.
    public var location: S3Location?
    /// The node's cache of fetched tables (default `<data-dir>/table-cache`).
    public var tableCacheDirectory: String?
    /// Its bound in MiB.
    public var tableCacheDirectoryMB: Int = 10_240
    /// Unreferenced objects younger than this are kept (an upload between its object and its
    /// row), in hours.
    public var graceHours: Double = 24

    public init(location: S3Location? = nil, tableCacheDirectory: String? = nil, tableCacheDirectoryMB: Int = 10_240,
                graceHours: Double = 24) {
        self.location = location
        self.tableCacheDirectory = tableCacheDirectory
        self.tableCacheDirectoryMB = tableCacheDirectoryMB
        self.graceHours = graceHours
    }

    static let settingNames = ["object-store", "table-cache-dir", "table-cache-dir-mb", "object-grace-hours"]

    static func resolve(_ value: (String) -> String?) throws -> ObjectStorageConfiguration {
        var configuration = ObjectStorageConfiguration()
        if let text = value("object-store"), !text.isEmpty, text != "directory" {
            do {
                configuration.location = try S3Location(parsing: text)
            } catch {
                throw ConfigurationError("object-store: \(error.message)")
            }
        }
        configuration.tableCacheDirectory = value("table-cache-dir")
        if let text = value("table-cache-dir-mb") {
            guard let number = Int(text.trimmingCharacters(in: .whitespaces)), number >= 1 else {
                throw ConfigurationError("table-cache-dir-mb: \"\(text)\" is not an integer of at least 1")
            }
            configuration.tableCacheDirectoryMB = number
        }
        if let text = value("object-grace-hours") {
            guard let hours = Double(text.trimmingCharacters(in: .whitespaces)), hours >= 0, hours.isFinite else {
                throw ConfigurationError("object-grace-hours: \"\(text)\" is not a number of hours of at least 0")
            }
            configuration.graceHours = hours
        }
        return configuration
    }

    /// The object store for a data directory: nil for the directory store (the metadata store
    /// opens it), else the S3 store, checked once (a wrong secret or a missing bucket fails
    /// here, with what to fix; a store that cannot be reached only logs, and requests answer
    /// 503 until it can).
    public func makeStore(dataDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                          logger: Logger? = nil) throws -> (any ObjectStore)? {
        guard let location else { return nil }
        let client: S3Client
        do {
            client = S3Client(location: location, credentials: try S3Credentials.fromEnvironment(environment))
        } catch {
            throw ConfigurationError(error.message)
        }
        do {
            try client.probe()
            try S3ObjectStore.keepFolders(client)
        } catch where error.kind == .unavailable {
            logger?.warning("the object store cannot be reached; requests that need it answer 503 until it can",
                            metadata: ["error": "\(error.message)"])
        } catch {
            throw ConfigurationError("object-store \(location): \(error.message)")
        }
        return try S3ObjectStore(client: client, scratchDirectory: dataDirectory + "/tmp",
                                 cacheDirectory: tableCacheDirectory ?? dataDirectory + "/table-cache",
                                 cacheBytes: UInt64(tableCacheDirectoryMB) << 20)
    }
}
