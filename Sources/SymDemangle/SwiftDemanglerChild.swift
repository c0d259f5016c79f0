import CDemangle
import CSwiftDemangleChild
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Demangles Swift names that might make the runtime's demangler run away (`SwiftOutputBound`
/// over its limit) in a child process where a runaway cannot hurt: a child per processor (at most
/// four), kept and reused, each serving one name at a time over a socket (plain C after `fork`, see
/// `Sources/CSwiftDemangleChild`). The child runs each name under a CPU timer
/// (`cpuMillisecondsPerName`), a cap on its address space and on the answer's length; the parent
/// waits for each answer with a deadline. A name that ends the child or is late is refused
/// (printed mangled) and the next name gets a new child.
///
/// Each runaway costs a child (up to `cpuMillisecondsPerName` of CPU and a fork); a budget of
/// `runawayBudget` runaways, refilled by one every `runawayRefillSeconds`, keeps a file full of
/// hostile names from costing that per name: past it, such names are refused without a try.
enum SwiftDemanglerChild {
    /// What the child said about a name.
    enum Answer: Equatable, Sendable {
        /// The runtime's text (before `swift-demangle`'s sugar).
        case demangled([UInt8])
        /// The runtime does not demangle the name.
        case notDemangled
        /// The name was not demangled because of a limit.
        case refused(SwiftDemangleRefusal)
    }

    /// CPU time one name may take in the child. The slowest of 534,544 real names takes well
    /// under a millisecond.
    static let cpuMillisecondsPerName: UInt32 = 200
    /// The longest answer taken (the longest real one is 3,466 bytes).
    static let maximumAnswerLength: UInt32 = 1 << 20
    /// How far the child's address space may grow past the parent's.
    static let addressSpaceGrowth: UInt64 = 512 << 20
    /// How long the parent waits for one answer (the CPU timer ends a runaway; this ends a child
    /// that is stopped or starved).
    static let answerDeadlineMilliseconds = 30_000
    /// Runaways allowed at once, and the seconds after which one more is.
    static let runawayBudget = 64.0
    static let runawayRefillSeconds = 1.0

    /// One child: its process and the parent's end of its socket (none when `pid` is 0).
    private struct Child {
        var pid: pid_t = 0
        var socket: Int32 = -1
    }

    /// The runaway budget, and counts for tests and reports.
    private struct Budget {
        var tokens = SwiftDemanglerChild.runawayBudget
        var lastRefill = SwiftDemanglerChild.now()
        var started = 0
        var runaways = 0
    }

    /// A child slot; several, so that threads demangling at once (`dump`'s) do not queue on one.
    private final class Slot: Sendable {
        let child = Mutex(Child())
    }

    /// One slot per processor, at most four.
    private static let slots: [Slot] = (0..<min(4, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))).map { _ in Slot() }
    private static let budget = Mutex(Budget())
    private static let nextSlot = Atomic<Int>(0)

    /// Children started so far in this process.
    static var childrenStarted: Int { budget.withLock { $0.started } }

    /// Demangles `name` (no NUL inside, at most `Demangler.maximumSwiftNameLength` bytes) in a child.
    static func demangle(_ name: UnsafeRawBufferPointer, style: SwiftNameStyle) -> Answer {
        let allowed = budget.withLock { budget in
            refill(&budget)
            return budget.tokens >= 1
        }
        guard allowed else { return .refused(.runawayBudget) }
        for slot in slots {
            if let answer = slot.child.withLockIfAvailable({ demangle(name, style: style, in: &$0) }) { return answer }
        }
        let slot = slots[nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue % slots.count]
        return slot.child.withLock { demangle(name, style: style, in: &$0) }
    }

    /// Demangles `name` in `child`, starting it when it is not running.
    private static func demangle(_ name: UnsafeRawBufferPointer, style: SwiftNameStyle, in child: inout Child) -> Answer {
        // A child that has died since the last name (a limit, a signal) is replaced once.
        for attempt in 0..<2 {
            if child.pid == 0, !start(&child) { return .refused(.noChild) }
            switch exchange(name, style: style, socket: child.socket) {
            case .answered(let answer):
                // A text over the answer cap took the child's CPU like a runaway: it costs a token.
                if case .refused(.answerTooLong) = answer {
                    budget.withLock { budget in
                        budget.tokens -= 1
                        budget.runaways += 1
                    }
                }
                return answer
            case .notSent where attempt == 0:
                stop(&child)
            case .notSent, .childGone, .late:
                stop(&child)
                budget.withLock { budget in
                    budget.tokens -= 1
                    budget.runaways += 1
                }
                return .refused(.runaway)
            }
        }
        return .refused(.noChild)
    }

    /// The outcome of one request.
    private enum Exchange {
        case answered(Answer)
        /// The child had ended before the request reached it.
        case notSent
        /// The child ended (or closed the socket) before answering.
        case childGone
        /// No answer within the deadline.
        case late
    }

    /// Sends `name` and reads the answer: one `send`, then usually one `recv` (with a receive
    /// timeout on the socket as the deadline), the bulk of the cost of a name sent here.
    private static func exchange(_ name: UnsafeRawBufferPointer, style: SwiftNameStyle, socket: Int32) -> Exchange {
        let sent = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: CRASHSYM_REQUEST_HEADER_SIZE + name.count) { request in
            let length = UInt32(name.count)
            request[0] = style == .full ? 0 : 1
            for index in 0..<4 { request[1 + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
            UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(request)[CRASHSYM_REQUEST_HEADER_SIZE...])
                .copyMemory(from: name)
            return sendAll(socket, UnsafeRawBufferPointer(request))
        }
        guard sent else { return .notSent }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackAnswerSize) { buffer -> Exchange in
            let scratch = UnsafeMutableRawBufferPointer(buffer)
            // The header and, most often, the whole text arrive in the first read.
            var received = 0
            while received < CRASHSYM_ANSWER_HEADER_SIZE {
                switch receiveSome(socket, UnsafeMutableRawBufferPointer(rebasing: scratch[received...])) {
                case .received(let count): received += count
                case .gone: return .childGone
                case .late: return .late
                }
            }
            var size = 0
            for index in (1...4).reversed() { size = size << 8 | Int(scratch[index]) }
            switch Int(scratch[0]) {
            case CRASHSYM_ANSWER_NOT_DEMANGLED: return .answered(.notDemangled)
            case CRASHSYM_ANSWER_TOO_LONG: return .answered(.refused(.answerTooLong))
            default: break
            }
            guard size <= Int(maximumAnswerLength) else { return .childGone }
            var text = [UInt8](repeating: 0, count: size)
            let early = min(size, received - CRASHSYM_ANSWER_HEADER_SIZE)
            text.withUnsafeMutableBytes { text in
                text.copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[CRASHSYM_ANSWER_HEADER_SIZE..<(CRASHSYM_ANSWER_HEADER_SIZE + early)]))
            }
            var filled = early
            while filled < size {
                let outcome = text.withUnsafeMutableBytes { receiveSome(socket, UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
                switch outcome {
                case .received(let count): filled += count
                case .gone: return .childGone
                case .late: return .late
                }
            }
            return .answered(.demangled(text))
        }
    }

    /// Bytes of an answer read onto the stack (most answers are far shorter).
    private static let stackAnswerSize = 4096

    /// Sends all of `bytes` (no SIGPIPE when the child is gone); false on an error.
    private static func sendAll(_ socket: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = send(socket, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Reads what has arrived into `buffer` (at least a byte), waiting at most the socket's
    /// receive timeout (`answerDeadlineMilliseconds`).
    private static func receiveSome(_ socket: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let got = recv(socket, buffer.baseAddress!, buffer.count, 0)
            if got > 0 { return .received(got) }
            if got < 0 && errno == EINTR { continue }
            return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .late : .gone
        }
    }

    /// The outcome of one read.
    private enum Received {
        case received(Int), gone, late
    }

    /// Starts a child; false when none could be made.
    private static func start(_ state: inout Child) -> Bool {
        let limits = crashsym_demangle_child_limits(
            maximum_name_length: UInt32(Demangler.maximumSwiftNameLength), maximum_answer_length: maximumAnswerLength,
            cpu_milliseconds_per_name: cpuMillisecondsPerName, address_space_growth: addressSpaceGrowth)
        var pid: pid_t = 0
        var socket: Int32 = -1
        guard crashsym_demangle_child_start(swift_demangle, _swift_backtrace_demangle, limits, &pid, &socket) == 0 else {
            return false
        }
        var timeout = timeval(tv_sec: answerDeadlineMilliseconds / 1000, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        state.pid = pid
        state.socket = socket
        budget.withLock { $0.started += 1 }
        return true
    }

    /// Ends the child (it may already have ended) and reaps it.
    private static func stop(_ state: inout Child) {
        guard state.pid != 0 else { return }
        kill(state.pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(state.pid, &status, 0) < 0 && errno == EINTR {}
        close(state.socket)
        state.pid = 0
        state.socket = -1
    }

    /// Adds the runaways earned since the last refill.
    private static func refill(_ state: inout Budget) {
        let time = now()
        state.tokens = min(runawayBudget, state.tokens + (time - state.lastRefill) / runawayRefillSeconds)
        state.lastRefill = time
    }

    /// Seconds on the monotonic clock.
    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
