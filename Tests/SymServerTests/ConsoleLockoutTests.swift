import Foundation
import SymServer
import Testing

/// The sign-in lockout of the store with an explicit clock (docs/console.md, "Signing in"):
/// failures age out after the window, and concurrent guesses cannot get past the limit.
struct ConsoleLockoutTests {
    private static func store() throws -> (CrashStore, String) {
        let directory = try Binary.temporaryDirectory()
        return (CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data")), directory)
    }

    private static let minute: Int64 = 60_000

    @Test("wrong passwords older than the window age out; five within it lock for 15 minutes")
    func failuresAgeOut() async throws {
        let (store, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let password = try store.createUser(name: "alice", admin: false)
        let start: Int64 = 1_800_000_000_000
        for index in 0..<4 {
            #expect(try await store.signIn(name: "alice", password: "wrong", now: start + Int64(index) * Self.minute) == .refused)
        }
        // 16 minutes after the first failure of the run: the four no longer count.
        let later = start + 16 * Self.minute
        #expect(try await store.signIn(name: "alice", password: "wrong", now: later) == .refused)
        for index in 1..<4 {
            #expect(try await store.signIn(name: "alice", password: "wrong", now: later + Int64(index) * 1000) == .refused)
        }
        // The fifth within the window locks for the lockout time.
        let fifth = later + 10 * Self.minute
        #expect(try await store.signIn(name: "alice", password: "wrong", now: fifth)
            == .locked(untilMilliseconds: fifth + CrashStore.lockoutMilliseconds))
        let outcome = try await store.signIn(name: "alice", password: password, now: fifth + 14 * Self.minute)
        #expect(outcome == .locked(untilMilliseconds: fifth + CrashStore.lockoutMilliseconds))
        // After the lockout: a fresh run, and the right password works.
        guard case .signedIn = try await store.signIn(name: "alice", password: password, now: fifth + 15 * Self.minute + 1) else {
            Issue.record("the right password after the lockout was refused")
            return
        }
    }

    @Test("concurrent wrong guesses: only the first five are checked, every other one is locked out")
    func concurrentGuesses() async throws {
        let (store, directory) = try Self.store()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try store.createUser(name: "alice", admin: false)
        let now: Int64 = 1_800_000_000_000
        let outcomes = try await withThrowingTaskGroup(of: CrashStore.SignInOutcome.self) { group in
            for index in 0..<20 {
                group.addTask { try await store.signIn(name: "alice", password: "guess \(index)", now: now) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .refused }.count == CrashStore.signInFailureLimit - 1)
        #expect(outcomes.filter { $0 == .locked(untilMilliseconds: now + CrashStore.lockoutMilliseconds) }.count
            == 20 - (CrashStore.signInFailureLimit - 1))
    }
}
