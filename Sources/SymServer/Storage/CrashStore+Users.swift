import Crypto
import Foundation
import GRDB
import HummingbirdBcrypt
import NIOPosix

/// People of the web console: accounts (bcrypt), grants of apps, sessions and sign-in lockout.
///
/// A session token and a CSRF token are 32 random bytes each; the store keeps only the SHA-256 of
/// the session token, so a copy of the database signs nobody in. Failed sign-ins are counted per
/// name, whether the account exists or not, so the lockout does not tell which names exist.
extension CrashStore {
    /// Registers the console's tables (run after the crash tables, under names of their own).
    static func registerUserMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-console-users") { db in
            try db.execute(sql: """
                CREATE TABLE console_user (
                    name TEXT PRIMARY KEY NOT NULL, password_hash TEXT NOT NULL, admin INTEGER NOT NULL,
                    created_ms INTEGER NOT NULL);
                CREATE TABLE console_grant (
                    user_name TEXT NOT NULL, app_id TEXT NOT NULL, PRIMARY KEY (user_name, app_id));
                CREATE TABLE console_session (
                    token_sha256 TEXT PRIMARY KEY NOT NULL, user_name TEXT NOT NULL, csrf TEXT NOT NULL,
                    created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
                CREATE INDEX console_session_by_user ON console_session(user_name);
                CREATE TABLE console_signin_failure (
                    name TEXT PRIMARY KEY NOT NULL, failures INTEGER NOT NULL, locked_until_ms INTEGER NOT NULL);
                CREATE INDEX console_crash_by_app_received ON crash(app_id, received_ms, version);
                """)
        }
        // When the run of failures began, so that old failures age out.
        migrator.registerMigration("v4-console-signin-window") { db in
            try db.execute(sql: "ALTER TABLE console_signin_failure ADD COLUMN window_start_ms INTEGER NOT NULL DEFAULT 0")
        }
    }

    /// An account as `crashsym users list` shows it.
    public struct ConsoleUser: Sendable, Equatable, Codable {
        public var name: String
        public var admin: Bool
        /// The apps granted (all apps for an admin, whatever this says).
        public var apps: [String]
    }

    /// A signed-in person, as a page sees them.
    public struct ConsoleSession: Sendable, Equatable {
        public var user: String
        public var admin: Bool
        /// The token every form of this session must carry.
        public var csrf: String
    }

    /// The outcome of a sign-in attempt.
    public enum SignInOutcome: Sendable, Equatable {
        /// Signed in: the cookie's token (in clear, only here) and the session.
        case signedIn(token: String, session: ConsoleSession)
        /// Wrong name or password.
        case refused
        /// Too many wrong passwords for this name: try again after this time (ms since 1970).
        case locked(untilMilliseconds: Int64)
    }

    /// Wrong passwords in a row that lock a name.
    public static let signInFailureLimit = 5
    /// How long wrong passwords are remembered: a failure older than this (counted from the
    /// first of a run) no longer counts towards the lockout.
    public static let signInFailureWindowMilliseconds: Int64 = 15 * 60 * 1000
    /// How long a locked name stays locked, in milliseconds.
    public static let lockoutMilliseconds: Int64 = 15 * 60 * 1000
    /// How long a session lasts, in milliseconds.
    public static let sessionMilliseconds: Int64 = 14 * 24 * 3600 * 1000
    /// bcrypt's cost factor (2^cost rounds); 11 takes about 0.1 s here.
    static let bcryptCost: UInt8 = 11
    /// Verified for unknown names, so that they take as long as known ones.
    static let decoyHash = Bcrypt.hash("crashsym-decoy-password", cost: bcryptCost)

    /// Whether `name` may name a user: 1 to 64 characters of [A-Za-z0-9._@-].
    public static func isUserName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a)
                || $0 == 0x2e || $0 == 0x5f || $0 == 0x40 || $0 == 0x2d
        }
    }

    /// A new one-time password: 20 characters of an alphabet without look-alikes (~115 bits).
    static func generatePassword() -> String {
        let alphabet = Array("abcdefghjkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    // MARK: Accounts (the CLI's, synchronous)

    /// Creates an account and returns its one-time password (the only time it exists in clear).
    public func createUser(name: String, admin: Bool) throws -> String {
        guard Self.isUserName(name) else { throw StoreError.conflict("a user name is 1 to 64 characters of [A-Za-z0-9._@-]") }
        let password = Self.generatePassword()
        let hash = Bcrypt.hash(password, cost: Self.bcryptCost)
        try database.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM console_user WHERE name = ?", arguments: [name]) == true {
                throw StoreError.conflict("a user named \(name) already exists (reset its password with `crashsym users reset-password`)")
            }
            try db.execute(sql: "INSERT INTO console_user (name, password_hash, admin, created_ms) VALUES (?, ?, ?, ?)",
                           arguments: [name, hash, admin, currentMilliseconds()])
        }
        return password
    }

    /// Replaces a user's password with a new one-time password, ends their sessions and lifts a lockout.
    public func resetPassword(name: String) throws -> String {
        let password = Self.generatePassword()
        let hash = Bcrypt.hash(password, cost: Self.bcryptCost)
        try database.write { db in
            try db.execute(sql: "UPDATE console_user SET password_hash = ? WHERE name = ?", arguments: [hash, name])
            guard db.changesCount == 1 else { throw StoreError.notFound("no user named \(name)") }
            try db.execute(sql: "DELETE FROM console_session WHERE user_name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM console_signin_failure WHERE name = ?", arguments: [name])
        }
        return password
    }

    /// Lets `name` see app `appID`.
    public func grant(name: String, appID: String) throws {
        try database.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM console_user WHERE name = ?", arguments: [name]) == true else {
                throw StoreError.notFound("no user named \(name)")
            }
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE id = ?", arguments: [appID]) == true else {
                throw StoreError.notFound("no app with id \(appID)")
            }
            try db.execute(sql: "INSERT OR IGNORE INTO console_grant (user_name, app_id) VALUES (?, ?)", arguments: [name, appID])
        }
    }

    /// Every account, by name.
    public func listUsers() throws -> [ConsoleUser] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT name, admin FROM console_user ORDER BY name").map { row in
                let name: String = row["name"]
                let apps = try String.fetchAll(db, sql: "SELECT app_id FROM console_grant WHERE user_name = ? ORDER BY app_id",
                                               arguments: [name])
                return ConsoleUser(name: name, admin: row["admin"], apps: apps)
            }
        }
    }

    // MARK: Sessions (the server's)

    /// Checks a password (bcrypt, on the thread pool of the caller's choosing: it is slow by
    /// design) and opens a session; counts attempts per name and locks a name for
    /// `lockoutMilliseconds` after `signInFailureLimit` wrong ones within
    /// `signInFailureWindowMilliseconds` (older failures age out).
    public func signIn(name: String, password: String, now: Int64) async throws -> SignInOutcome {
        // The attempt is counted before the password is checked, in one statement: concurrent
        // guesses each take a number, and only the first `signInFailureLimit` of a window reach
        // bcrypt (counting after the check let every guess in flight through). A success
        // deletes the row.
        let limit = Self.signInFailureLimit
        let attempt = try await write { db -> (number: Int, lockedUntil: Int64) in
            let row = try Row.fetchOne(db, sql: """
                INSERT INTO console_signin_failure (name, failures, locked_until_ms, window_start_ms) VALUES (?1, 1, 0, ?2)
                ON CONFLICT (name) DO UPDATE SET
                    failures = CASE WHEN window_start_ms <= ?2 - ?4 AND locked_until_ms <= ?2 THEN 1 ELSE failures + 1 END,
                    window_start_ms = CASE WHEN window_start_ms <= ?2 - ?4 AND locked_until_ms <= ?2 THEN ?2 ELSE window_start_ms END,
                    locked_until_ms = CASE WHEN window_start_ms <= ?2 - ?4 AND locked_until_ms <= ?2 THEN 0
                                           WHEN failures + 1 = ?3 THEN ?2 + ?5 ELSE locked_until_ms END
                RETURNING failures, locked_until_ms
                """, arguments: [name, now, limit, Self.signInFailureWindowMilliseconds, Self.lockoutMilliseconds])
            return (row?["failures"] ?? limit + 1, row?["locked_until_ms"] ?? now + Self.lockoutMilliseconds)
        }
        if attempt.number > limit { return .locked(untilMilliseconds: attempt.lockedUntil) }
        let state = try await read { db -> (hash: String?, admin: Bool) in
            let user = try Row.fetchOne(db, sql: "SELECT password_hash, admin FROM console_user WHERE name = ?", arguments: [name])
            return (user?["password_hash"], user?["admin"] ?? false)
        }
        let hash = state.hash ?? Self.decoyHash
        let verified = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
        let matches = verified && state.hash != nil
        guard matches else {
            return attempt.number == limit ? .locked(untilMilliseconds: attempt.lockedUntil) : .refused
        }
        let token = Self.randomHex(bytes: 32), csrf = Self.randomHex(bytes: 32)
        let expires = now + Self.sessionMilliseconds
        try await write { db in
            try db.execute(sql: "DELETE FROM console_signin_failure WHERE name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM console_session WHERE expires_ms <= ?", arguments: [now])
            try db.execute(sql: """
                INSERT INTO console_session (token_sha256, user_name, csrf, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)
                """, arguments: [Self.sessionKey(token), name, csrf, now, expires])
        }
        return .signedIn(token: token, session: ConsoleSession(user: name, admin: state.admin, csrf: csrf))
    }

    /// The live session of a cookie's token, nil when unknown or expired.
    public func session(token: String, now: Int64) async throws -> ConsoleSession? {
        guard token.utf8.count == 64 else { return nil }
        return try await read { db in
            try Row.fetchOne(db, sql: """
                SELECT s.user_name, s.csrf, u.admin FROM console_session s JOIN console_user u ON u.name = s.user_name
                WHERE s.token_sha256 = ? AND s.expires_ms > ?
                """, arguments: [Self.sessionKey(token), now]).map {
                ConsoleSession(user: $0["user_name"], admin: $0["admin"], csrf: $0["csrf"])
            }
        }
    }

    /// Ends the session of a cookie's token.
    public func signOut(token: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM console_session WHERE token_sha256 = ?", arguments: [Self.sessionKey(token)])
        }
    }

    /// Forgets failures whose window and lockout are over: rows of names tried once (or by a
    /// guesser walking through names) would otherwise stay for ever.
    public func forgetSignInFailures(now: Int64) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM console_signin_failure WHERE window_start_ms <= ? AND locked_until_ms <= ?",
                           arguments: [now - Self.signInFailureWindowMilliseconds, now])
            return db.changesCount
        }
    }

    /// The apps a person may see (every app for an admin), oldest first.
    public func visibleApps(_ session: ConsoleSession) async throws -> [SymbolStore.App] {
        try await read { db in
            let sql = session.admin
                ? "SELECT id, name, created FROM app ORDER BY created, id"
                : """
                  SELECT a.id, a.name, a.created FROM app a JOIN console_grant g ON g.app_id = a.id
                  WHERE g.user_name = ? ORDER BY a.created, a.id
                  """
            return try Row.fetchAll(db, sql: sql, arguments: session.admin ? [] : [session.user]).map {
                SymbolStore.App(id: $0["id"], name: $0["name"], created: $0["created"])
            }
        }
    }

    /// The app `appID` when the person may see it; nil otherwise (unknown and forbidden alike).
    public func visibleApp(_ session: ConsoleSession, appID: String) async throws -> SymbolStore.App? {
        try await read { db in
            let row = try Row.fetchOne(db, sql: "SELECT id, name, created FROM app WHERE id = ?", arguments: [appID])
            guard let row else { return nil }
            if !session.admin {
                guard try Bool.fetchOne(db, sql: "SELECT 1 FROM console_grant WHERE user_name = ? AND app_id = ?",
                                        arguments: [session.user, appID]) == true else { return nil }
            }
            return SymbolStore.App(id: row["id"], name: row["name"], created: row["created"])
        }
    }

    static func sessionKey(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
