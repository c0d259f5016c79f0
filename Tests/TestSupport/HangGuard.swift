import Foundation
import Synchronization

/// A bound on how long a piece of work may run, counted from when it starts: the hang guard of
/// tests whose code must never hang (streamed sections handed between threads, hostile input).
///
/// Swift Testing's `.timeLimit` counts from when the test is scheduled, so its time also runs
/// while the test waits for a thread of the cooperative pool (two on a 2-core machine), which
/// other tests of a full run hold for minutes with blocking work (processes they wait for,
/// servers they poll): a test of two seconds then "exceeds" two minutes before it has run. This
/// bound starts with the work, on a thread of its own.
public enum HangGuard {
    /// The work had not returned `seconds` after it started.
    public struct Exceeded: Error, CustomStringConvertible {
        public let description: String
    }

    /// What `body` returns (or throws), run on a thread of its own; throws `Exceeded` when it has
    /// not returned `seconds` after it started (the thread is then left to itself: the test failed).
    public static func run<T: Sendable>(within seconds: Double, _ what: String,
                                        _ body: @escaping @Sendable () throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let thread = Thread {
            let result = Result { try body() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
        guard done.wait(timeout: .now() + seconds) == .success else {
            throw Exceeded(description: "\(what): not done \(seconds) s after it started (a hang?)")
        }
        return try outcome.withLock { $0! }.get()
    }
}
