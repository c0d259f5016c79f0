#if canImport(Glibc)
import Glibc
#endif
import Logging
import Metrics
import Synchronization

/// What the thread-pool work of a batch of crash jobs is doing, for the CPU-time watchdog of
/// `CrashProcessor`: which crash it processes, on which thread, from which point of that thread's
/// CPU clock; and whether the watchdog gave the batch up (its outcomes are then not committed).
///
/// A thread cannot be stopped from outside, so a crash over the budget is failed and the rest of
/// its batch handed back while the thread finishes (or not) on its own; the CPU clock, not the
/// wall clock, is read, so a loaded machine does not fail crashes that only waited.
final class ProcessingWatch: Sendable {
    private struct State {
        var seq: Int64?
        var id: String?
        var clock: clockid_t?
        var start: Int64 = 0
        var abandoned = false
    }

    private let state = Mutex(State())

    /// Called on the processing thread as it starts on crash `seq` (id `id`).
    func begin(seq: Int64, id: String) {
        var clock = clockid_t()
        let known = pthread_getcpuclockid(pthread_self(), &clock) == 0
        let start = known ? Self.nanoseconds(of: clock) ?? 0 : 0
        state.withLock { state in
            state.seq = seq
            state.id = id
            state.clock = known ? clock : nil
            state.start = start
        }
    }

    /// Called on the processing thread when it has done the batch's crashes.
    func end() {
        state.withLock { state in
            state.seq = nil
            state.id = nil
            state.clock = nil
        }
    }

    /// The crash being processed and the CPU time its thread spent on it so far; nil between crashes.
    func current() -> (seq: Int64, id: String, cpu: Duration)? {
        let (seq, id, clock, start) = state.withLock { ($0.seq, $0.id, $0.clock, $0.start) }
        guard let seq, let id, let clock, let now = Self.nanoseconds(of: clock) else { return nil }
        return (seq, id, .nanoseconds(max(0, now - start)))
    }

    /// Gives the batch up if its thread is still on crash `seq`; true only then, and only once.
    /// (Under the same lock as `end`: a batch whose thread ended first is not given up.)
    func abandon(seq: Int64) -> Bool {
        state.withLock { state in
            guard !state.abandoned, state.seq == seq else { return false }
            state.abandoned = true
            return true
        }
    }

    /// Whether the watchdog gave the batch up.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Whether threads have a CPU clock here (`pthread_getcpuclockid`, then `clock_gettime` on
    /// it): without one `current()` is always nil and the watchdog never fires.
    static let threadCPUClockAvailable: Bool = {
        var clock = clockid_t()
        return pthread_getcpuclockid(pthread_self(), &clock) == 0 && nanoseconds(of: clock) != nil
    }()

    /// `crashsym_crash_cpu_watchdog`: 1 when the watchdog reads the CPU clock, 0 when it is off.
    private static let watchdogGauge = Gauge(label: "crashsym_crash_cpu_watchdog")

    /// Says once, as processing starts, whether the watchdog can run: `crashsym_crash_cpu_watchdog`
    /// in `/metrics`, and a warning in the log when it cannot (no crash is then failed for its
    /// CPU time, `--max-crash-cpu-seconds` or not).
    static func announce(logger: Logger) {
        watchdogGauge.record(threadCPUClockAvailable ? 1 : 0)
        guard !threadCPUClockAvailable else { return }
        logger.warning("the thread CPU clock is unavailable: the crash processing watchdog is off (--max-crash-cpu-seconds is not enforced)")
    }

    private static func nanoseconds(of clock: clockid_t) -> Int64? {
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
