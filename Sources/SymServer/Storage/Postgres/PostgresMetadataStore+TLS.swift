import Foundation
import PostgresNIO

/// TLS to PostgreSQL, chosen as libpq chooses it: `sslmode` (and `sslrootcert`) in the query of
/// the `--database` URL, e.g. `postgres://crashsym@db.internal/crashsym?sslmode=verify-full&sslrootcert=/etc/crashsym/db-ca.pem`.
/// postgres-nio (through NIOSSL) does the handshake; this file maps the modes onto what it offers.
extension PostgresMetadataStore {
    /// libpq's `sslmode` values that postgres-nio can honour (`allow`, which tries without TLS
    /// first, it cannot).
    public enum SSLMode: String, Sendable, Equatable, CaseIterable {
        /// No TLS.
        case disable
        /// TLS when the server offers it, else a plain connection; the certificate is not checked.
        case prefer
        /// TLS or no connection; the certificate is not checked (as libpq: checked against
        /// `sslrootcert` when one is given, like `verify-ca`).
        case require
        /// TLS, and the certificate must be signed by a trusted authority (`sslrootcert`, else the
        /// system's); the host name is not checked.
        case verifyCA = "verify-ca"
        /// TLS, a certificate signed by a trusted authority, and naming the host of the URL.
        case verifyFull = "verify-full"
    }
}

extension PostgresMetadataStore.Location {
    /// Reads `sslmode` and `sslrootcert`; any other parameter is an error (a misspelt one would
    /// otherwise silently weaken the connection).
    mutating func readQuery(_ items: [URLQueryItem], url: String) throws {
        for item in items {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(PostgresMetadataStore.SSLMode.init(rawValue:)) else {
                    let modes = PostgresMetadataStore.SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw StoreError.conflict("--database \(url): sslmode=\(item.value ?? "") is not one of \(modes)")
                }
                sslMode = mode
            case "sslrootcert":
                guard let path = item.value, !path.isEmpty else { throw StoreError.conflict("--database \(url): sslrootcert= names no file") }
                sslRootCertificate = path
            default:
                throw StoreError.conflict("--database \(url): unknown parameter \(item.name) (accepted: sslmode, sslrootcert)")
            }
        }
        if sslRootCertificate != nil && sslMode == .disable {
            throw StoreError.conflict("--database \(url): sslrootcert= with sslmode=disable: choose require, verify-ca or verify-full")
        }
        // Read now, so that a missing or malformed file is an error at start, not at each connection.
        _ = try tlsConfiguration()
    }

    /// NIOSSL's configuration for the mode; nil for `disable`.
    func tlsConfiguration() throws -> TLSConfiguration? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable: return nil
        case .prefer, .require: configuration.certificateVerification = sslRootCertificate == nil ? .none : .noHostnameVerification
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let path = sslRootCertificate {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw StoreError.conflict("--database: sslrootcert=\(path) cannot be read as PEM certificates (\(error)): "
                    + "name the file of the authority that signed the server's certificate")
            }
            guard !certificates.isEmpty else { throw StoreError.conflict("--database: sslrootcert=\(path) holds no PEM certificate") }
            configuration.trustRoots = .certificates(certificates)
        }
        return configuration
    }

    /// The pool's TLS setting. The configuration was checked by `readQuery`; should `sslrootcert`
    /// have become unreadable since, it fails closed (TLS that trusts no one, never a plain
    /// connection), and `migrate()`'s own connection says why.
    var clientTLS: PostgresClient.Configuration.TLS {
        do {
            guard let configuration = try tlsConfiguration() else { return .disable }
            return sslMode == .prefer ? .prefer(configuration) : .require(configuration)
        } catch {
            var trustingNoOne = TLSConfiguration.makeClientConfiguration()
            trustingNoOne.trustRoots = .certificates([])
            return .require(trustingNoOne)
        }
    }

    /// The TLS setting of a single connection (`migrate`'s).
    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        guard let configuration = try tlsConfiguration() else { return .disable }
        let context = try NIOSSLContext(configuration: configuration)
        return sslMode == .prefer ? .prefer(context) : .require(context)
    }

    /// Why a connection failed, in one line that says what to check.
    func connectionFailure(_ error: any Error) -> String {
        if let error = error as? StoreError { return error.message }
        guard let error = error as? PSQLError else { return PostgresMetadataStore.storeError(error).message }
        if error.code == .sslUnsupported {
            return "the server does not accept TLS (sslmode=\(sslMode.rawValue)): turn on ssl in its postgresql.conf, "
                + "or connect with sslmode=prefer or disable"
        }
        if let underlying = error.underlying as? NIOSSLError {
            let reason: String
            if case .handshakeFailed(let inner) = underlying { reason = "\(inner)" } else { reason = "\(underlying)" }
            let check = sslRootCertificate.map { "that \($0) (sslrootcert) is the authority that signed it" }
                ?? "that the system trusts its authority, or name it with sslrootcert="
            let name = sslMode == .verifyFull ? ", and that it names \(host)" : ""
            return "the TLS handshake failed, the server's certificate was not accepted (\(reason)): check \(check)\(name)"
        }
        if let underlying = error.underlying { return "\(underlying)" }
        return PostgresMetadataStore.storeError(error).message
    }
}
