import Logging
import ServiceLifecycle

/// Rewrites crash packs without the bytes of their deleted crashes (docs/storage.md "Crash
/// packs"): a pack holding a crash deleted by request (`DELETE …/crashes/{id}`) on the next pass,
/// and a pack whose dead bytes (crashes expired by retention) are at least `deadFraction` of it.
///
/// A rewrite is crash-safe in this order: the live members are read from the old pack and
/// checked (SHA-256), a new pack of them is put durably (`CrashPack.put`, as ingestion does),
/// the rows are repointed to it in one transaction (`MetadataStore.repointPack`), the new pack
/// is confirmed (put again should a remover have taken it before the commit), and only then is
/// the old pack removed (`removeUnused`: it goes only if no row names it). Killed before the
/// commit, the new pack is unreferenced and the object sweeper removes it after the grace
/// period, the pack's lease expires and the next pass rewrites it again; killed after the commit,
/// the old pack is the unreferenced one. A reader that read a row before the commit and finds
/// the old pack gone reads the row again (`ObjectStore.read(raw:limit:relocate:)`).
struct PackCompactor: Service {
    let objects: any ObjectStore
    let store: any MetadataStore
    /// Time between passes.
    let interval: Duration
    let logger: Logger

    /// Packs whose dead bytes are at least this share of their members' bytes are rewritten.
    static let deadFraction = 0.5
    /// How long a compactor holds a pack (another node's pass skips it meanwhile): far longer
    /// than reading and writing one pack of at most 8 MiB takes.
    static let leaseMilliseconds: Int64 = 600_000
    /// Packs leased at a time.
    static let batch = 16

    func run() async throws {
        await runPeriodically(every: interval, logger: logger, failure: "pack compaction failed") {
            let rewritten = try await compact(now: currentMilliseconds())
            if rewritten > 0 { logger.info("pack compaction: packs rewritten", metadata: ["crashsym.packs": "\(rewritten)"]) }
        }
    }

    /// One pass at `now` (milliseconds since 1970): every pack due is rewritten (or removed, when
    /// no member lives); returns how many were. A pack that cannot be rewritten now (the object
    /// store is down, a member is corrupt) is logged and tried again once its lease expires.
    @discardableResult
    func compact(now: Int64) async throws -> Int {
        var rewritten = 0
        while true {
            let leased = try await store.leasePackCompactions(deadFraction: Self.deadFraction, limit: Self.batch, now: now,
                                                              lease: Self.leaseMilliseconds)
            for pack in leased {
                do {
                    try await rewrite(pack)
                    rewritten += 1
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    logger.warning("cannot compact crash pack \(pack.pack); retried after its lease", metadata: ["error": "\(error)"])
                }
            }
            if leased.count < Self.batch { return rewritten }
        }
    }

    /// Rewrites one pack without its dead members.
    func rewrite(_ job: CrashStore.PackCompaction) async throws {
        guard !job.members.isEmpty else {
            // Every member gone: the pack itself goes (if deletion did not remove it already).
            _ = try await store.repointPack(job.pack, to: job.pack, members: [])
            try await objects.removeUnused([job.pack], in: store)
            return
        }
        // The whole pack in one read (one GET on S3), each live member checked against its SHA-256.
        let whole = try await objects.read(sha256: job.pack, range: nil,
                                           limit: CrashPack.headerSize + CrashPack.byteLimit + CrashPack.memberLimit)
        // A foreign object, or a pack counting fewer members than crashes name it, is not rewritten.
        let count = try CrashPack.memberCount(header: Array(whole.prefix(CrashPack.headerSize)))
        guard job.members.count <= count else {
            throw StoreError.corrupt("crash pack \(job.pack) holds \(count) members, but \(job.members.count) crashes name it")
        }
        let live = try job.members.map { member in
            let raw = CrashStore.RawLocation(sha256: member.sha256, size: member.size, pack: job.pack, offset: member.offset)
            try raw.checkBounds(limit: CrashPack.memberLimit)
            let start = min(whole.count, Int(clamping: member.offset)), end = min(whole.count, start + max(0, member.size))
            return try raw.checked(Array(whole[start..<end]))
        }
        let pack = try await CrashPack.put(live, into: objects)
        let moved: Int
        do {
            moved = try await store.repointPack(job.pack, to: pack.sha256,
                                                members: zip(job.members, pack.offsets).map { member, offset in
                                                    CrashStore.PackMember(seq: member.seq, sha256: member.sha256, size: member.size, offset: offset)
                                                })
        } catch {
            // Nothing names the new pack unless the commit happened after all (then it stays).
            _ = try? await objects.removeUnused([pack.sha256], in: store)
            throw error
        }
        if moved == 0 {
            // Every member was deleted, or moved by another compactor, meanwhile.
            try await objects.removeUnused([pack.sha256], in: store)
        } else {
            try await objects.confirm(bytes: pack.bytes, sha256: pack.sha256)
        }
        try await objects.removeUnused([job.pack], in: store)
    }
}
