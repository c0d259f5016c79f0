import NIOCore
import PostgresNIO
import Synchronization

/// Group commit of crash ingestion on PostgreSQL: the crashes of concurrent requests go into the
/// database as one statement (their `crash` rows, their jobs and the notification of idle
/// workers), and each request is answered only once that statement has committed, so a 201 means
/// what it meant with one transaction a crash.
///
/// No timer and no task of its own: a request that finds fewer than `flushers` statements in
/// flight sends one at once with every crash waiting (its own first); one that finds them all
/// busy waits, and the next statement to finish hands the lead to the oldest waiter, which sends
/// the next batch. An idle server therefore adds no latency, and a busy one commits as many
/// crashes per round trip (and per WAL flush) as arrived during the previous one.
final class PostgresIngestBatcher: Sendable {
    /// Statements in flight at once (each holds a connection of the pool meanwhile).
    let flushers: Int
    /// Crashes per statement at most.
    let batchLimit: Int

    /// What a waiting request is told.
    enum Outcome: Sendable {
        /// Its crash committed (or failed).
        case done(Result<CrashStore.Receipt, any Error>)
        /// It sends the next batch itself.
        case lead
    }

    /// A crash on its way in, with the id its row will have.
    struct Item: Sendable {
        var id: String
        var crash: CrashStore.NewCrash
    }

    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var waiting: [Waiter] = []
        var flushing = 0
    }

    private let state = Mutex(State())

    init(flushers: Int = 4, batchLimit: Int = 256) {
        self.flushers = flushers
        self.batchLimit = batchLimit
    }

    /// Inserts `item` (a crash without an idempotency key) together with the crashes of
    /// concurrent calls, with `insert`; returns once its row has committed. `insert` gets at
    /// least one crash and either commits all of them or throws (one statement); its errors are
    /// PostgreSQL's, which this maps to `StoreError`s.
    func accept(_ item: Item, insert: @Sendable ([Item]) async throws -> Void) async throws -> CrashStore.Receipt {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let lead = state.withLock { state -> Bool in
                guard state.flushing < flushers else {
                    state.waiting.append(Waiter(item: item, continuation: continuation))
                    return false
                }
                state.flushing += 1
                return true
            }
            if lead { continuation.resume(returning: .lead) }
        }
        switch outcome {
        case .done(let result): return try result.get()
        case .lead: break
        }
        // The leader: its own crash first, then those waiting, up to the limit.
        let others = state.withLock { state -> [Waiter] in
            let taken = Array(state.waiting.prefix(batchLimit - 1))
            state.waiting.removeFirst(taken.count)
            return taken
        }
        let batch = [item] + others.map(\.item)
        var results: [Result<CrashStore.Receipt, any Error>]
        do {
            try await insert(batch)
            results = batch.map { .success(Self.receipt($0)) }
        } catch let error where batch.count > 1 && Self.rejected(error) {
            // The server refused the statement (a crash of a deleted app, say): each crash alone,
            // so that one refused crash does not fail the others.
            results = []
            for item in batch {
                do {
                    try await insert([item])
                    results.append(.success(Self.receipt(item)))
                } catch {
                    results.append(.failure(PostgresMetadataStore.storeError(error)))
                }
            }
        } catch {
            let error = PostgresMetadataStore.storeError(error)
            results = batch.map { _ in .failure(error) }
        }
        for (waiter, result) in zip(others, results.dropFirst()) { waiter.continuation.resume(returning: .done(result)) }
        // The lead passes to the oldest waiter, which sends what arrived meanwhile.
        let next = state.withLock { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.flushing -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        if let next { next.continuation.resume(returning: .lead) }
        return try results[0].get()
    }

    /// The receipt of a crash inserted by a batch: its id is chosen before the insert.
    private static func receipt(_ item: Item) -> CrashStore.Receipt {
        CrashStore.Receipt(id: item.id, state: .pending, groupID: nil, replayed: false)
    }

    /// Whether `error` is PostgreSQL refusing the statement (a constraint, bad data), as opposed
    /// to the server or the connection failing, after which every crash alone would fail too.
    static func rejected(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] != nil
    }
}

/// A `text[]` parameter whose elements may be NULL (postgres-nio's arrays have none), in
/// PostgreSQL's binary array format: dimensions, has-nulls flag, element type, then length and
/// lower bound of the one dimension, then each element as its length (-1: NULL) and bytes.
struct NullableTextArray: PostgresNonThrowingEncodable {
    var elements: [String?]

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains(nil) ? 1 : 0, as: Int32.self)
        buffer.writeInteger(PostgresDataType.text.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            buffer.writeInteger(Int32(element.utf8.count))
            buffer.writeString(element)
        }
    }
}
