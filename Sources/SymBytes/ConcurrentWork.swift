#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs pieces of work on threads of their own (plain pthreads: the format modules use no
/// Dispatch, and each piece needs a whole core for a while).
///
/// A piece crosses to its thread as a raw pointer: it is touched by that thread until
/// `pthread_join` returns, and only then by the caller, so no memory is shared while it is
/// being written unless the pieces themselves share it.
public enum ConcurrentWork {
    /// Runs the first piece on the calling thread and the others on threads of their own, and
    /// returns when all are done. A piece whose thread cannot be created runs on the caller.
    public static func run(_ pieces: [() -> Void]) {
        guard pieces.count > 1 else {
            pieces.first?()
            return
        }
        var threads: [pthread_t] = []
        var leftOver: [() -> Void] = []
        for piece in pieces.dropFirst() {
            if let thread = start(piece) { threads.append(thread) } else { leftOver.append(piece) }
        }
        pieces[0]()
        for piece in leftOver { piece() }
        for thread in threads { pthread_join(thread, nil) }
    }

    /// Starts `body` on a detached thread of its own, for a long-running loop (a daemon's
    /// collector, senders, a metrics listener); false when the thread cannot be created.
    @discardableResult
    public static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard let thread = start(body) else { return false }
        pthread_detach(thread)
        return true
    }

    /// Starts `piece` on a thread of its own; nil when the thread cannot be created.
    private static func start(_ piece: @escaping () -> Void) -> pthread_t? {
        let context = Unmanaged.passRetained(Piece(piece)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            Unmanaged<Piece>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Piece>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    /// A piece of work boxed for `pthread_create` (a closure is not a class, so it cannot cross as
    /// a pointer by itself).
    private final class Piece {
        let run: () -> Void

        init(_ run: @escaping () -> Void) { self.run = run }
    }
}
