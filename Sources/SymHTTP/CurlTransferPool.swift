import Synchronization

// The audited `@unchecked Sendable` wrapper of the libcurl easy handle (STYLE.md rule 11): a
// `CurlTransfer` is only ever used by the one thread that took it out of `idle` (under the lock)
// until it is put back (under the lock), so no two threads touch a handle at once.

/// Easy handles kept between requests, so that the next request to the same place reuses the
/// connection (and the DNS answer) the previous one left open: libcurl keeps both in the handle
/// across `curl_easy_reset`, which `CurlTransfer.perform` calls first, so nothing else of one
/// request (headers, credentials, body, resolve list) reaches the next.
///
/// Handles are kept per `key`, which names what a connection may be reused for: the S3 client
/// passes its endpoint; webhook delivery passes the pinned `CURLOPT_RESOLVE` entry, so that a
/// connection is reused only for the addresses it was checked for. Any number of threads may
/// share a pool; each request has a handle of its own for its duration.
public final class CurlTransferPool: @unchecked Sendable {
    /// Most idle handles kept (each holds up to libcurl's five connections); more are freed, and
    /// with 0 every request has a handle (and connection) of its own.
    public let capacity: Int
    private let lock = Mutex(())
    private var idle: [(key: String, transfer: CurlTransfer)] = []

    /// An empty pool keeping at most `capacity` idle handles.
    public init(capacity: Int = 16) {
        self.capacity = capacity
    }

    /// Runs `body` with an idle handle of `key` (a new one when none is idle), then keeps the
    /// handle for the next request of `key`; fails only when libcurl cannot make a handle.
    public func withTransfer<T>(key: String, _ body: (CurlTransfer) -> T) throws(TransferFailure) -> T {
        let reused: CurlTransfer? = lock.withLock { _ in
            guard let index = idle.lastIndex(where: { $0.key == key }) else { return nil }
            return idle.remove(at: index).transfer
        }
        let transfer: CurlTransfer
        if let reused { transfer = reused } else { transfer = try CurlTransfer() }
        let result = body(transfer)
        lock.withLock { _ in
            guard capacity > 0 else { return }
            // The least recently used handle goes first.
            if idle.count >= capacity { idle.removeFirst() }
            idle.append((key, transfer))
        }
        return result
    }

    /// How many handles are idle now.
    public var idleCount: Int { lock.withLock { _ in idle.count } }
}
