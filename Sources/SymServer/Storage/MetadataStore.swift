import SymBundle
import Symbolication

/// The metadata of a crashsym store, named by domain verbs: apps and their keys, versions and
/// modules, crashes and their processing jobs, groups, people of the console and webhooks
/// (DESIGN.md "Storage"). Routes, services and commands depend on this protocol only; no SQL,
/// row or connection leaves an implementation, and every failure is a `StoreError`.
///
/// Two implementations: SQLite (`CrashStore` over the `SymbolStore`'s database, the embedded
/// default) and PostgreSQL (`PostgresMetadataStore`, shared by several nodes). The behaviour each
/// must have is `MetadataStoreConformanceTests`, run against both.
///
/// Jobs are leased rows: a lease expires (`leaseJobs(lease:)`) unless its holder renews it
/// (`renewLeases`), so the work of a node that died is taken by another after the lease.
public protocol MetadataStore: Sendable {
    // MARK: Apps and keys

    /// Creates an app and returns it with its key (the only time the key exists in clear); a
    /// malformed or taken id is a `StoreError.conflict`.
    func createApp(name: String, id: String?) async throws -> (app: SymbolStore.App, key: String)
    /// All apps, oldest first.
    func listApps() async throws -> [SymbolStore.App]
    /// Replaces the key of app `appID` and returns the new key; the old key stops working at once.
    func rotateKey(appID: String) async throws -> String
    /// The stored key hash of app `appID`, nil when there is no such app.
    func keyHash(appID: String) async throws -> [UInt8]?

    // MARK: Versions and modules

    /// Splits `modules` into those the app lacks and those it has, linking present ones to the version.
    func missing(appID: String, version: String, package: String, platform: String,
                 modules: [MissingSymbolsRequest.Module]) async throws -> MissingSymbolsResponse
    /// Records modules whose files are durable in the object store, in one transaction.
    func commit(appID: String, manifest: BundleManifest, modules: [SymbolStore.StoredModule]) async throws -> SymbolStore.CommitResult
    /// What the app has stored of each of `buildIDs` it has.
    func states(appID: String, buildIDs: [String]) async throws -> [String: SymbolStore.ModuleState]
    /// The app's versions, oldest first.
    func versions(appID: String) async throws -> [SymbolStore.VersionSummary]
    /// The modules of a version, nil when the version is unknown.
    func modules(appID: String, version: String) async throws -> [SymbolStore.ModuleSummary]?
    /// The module the app uploaded with `buildID` and the versions that hold it, newest first;
    /// nil when the app has no module with it (another app's modules are never looked at).
    func buildVersions(appID: String, buildID: String) async throws -> SymbolStore.BuildVersions?
    /// The SHA-256 of an uploaded debug file with this build-id (any app), for debuginfod.
    func debugFileObject(buildID: String) async throws -> String?
    /// A table of the app: the object holding it and its size.
    func table(appID: String, buildID: String) async throws -> (sha256: String, size: Int64)?
    /// Which of `buildIDs` the app has a table for.
    func presentTables(appID: String, buildIDs: [String]) async throws -> Set<String>
    /// The tables a report needs: by build-id, and by module name among the version's tables.
    func reportTables(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) async throws -> ReportTables
    /// The same answers on the calling thread, when the backend can read synchronously (SQLite);
    /// nil when it cannot (PostgreSQL), and callers use `reportTables` instead.
    var immediateTables: (any ImmediateTableReader)? { get }

    // MARK: Crashes

    /// Records a crash and its processing job in one transaction (idempotency keys replay).
    func accept(_ crash: CrashStore.NewCrash) async throws -> CrashStore.Receipt
    /// Records a minidump crash, what its client sent (product, annotations, attachments) and
    /// its job in one transaction; a replayed idempotency key stores nothing.
    func acceptMinidump(_ crash: CrashStore.NewCrash, details: CrashStore.MinidumpDetails) async throws -> CrashStore.Receipt
    /// What the client sent with crash `id`; nil when it is not a minidump crash.
    func minidumpDetails(appID: String, id: String) async throws -> CrashStore.MinidumpDetails?
    /// Forgets the attachments of deleted crashes; returns the objects no crash uses any more,
    /// for the caller to remove after the commit.
    func collectOrphanAttachments() async throws -> [String]
    /// Removes with `remove` each of `candidates` (object SHA-256s) that no row names (table,
    /// debug file, raw crash, attachment), checking and removing under the store's write lock so
    /// that no row naming it commits in between; returns those `remove` said are gone. A writer
    /// that committed its row after such a removal finds the object missing and puts it again
    /// (`ObjectStore.confirm`). The one way objects leave the store: call it through
    /// `ObjectStore.removeUnused`.
    func removeUnusedObjects(_ candidates: [String], using remove: @escaping @Sendable (String) throws -> Bool) async throws -> [String]
    /// Every object a row names (tables, debug files, raw crashes, attachments): what the object
    /// sweeper keeps. Read after the sweeper lists the store, so a row committed meanwhile is seen.
    func referencedObjects() async throws -> Set<String>
    /// Raises the stored drop and storm totals of agent `agentID` in `appID` to these (never lowers
    /// them) and notes its queue length when given (nil keeps the last one).
    func recordAgentCounts(appID: String, agentID: String, host: String?, dropped: Int64, suppressed: Int64, queue: Int64?) async throws
    /// The app's agents that reported totals, most recently reported first.
    func agentCounts(appID: String) async throws -> [CrashStore.AgentCounts]
    /// The signature of crash `id` with every examined frame's role, as computed when it was last
    /// processed; nil when it has none.
    func grouping(appID: String, crashID id: String) async throws -> CrashSignature?
    /// Queues again every crash of the app's `version` that lacked a table named one of `names`;
    /// returns how many.
    @discardableResult
    func requeue(appID: String, version: String, names: [String], now: Int64) async throws -> Int
    /// Queues every crash that lacked a name its version now has exactly one table of (at start).
    @discardableResult
    func requeueResolvableNames(now: Int64) async throws -> Int
    /// How many tables of the app's `version` each of `names` has (1: matched by name; more: ambiguous).
    func namedTableCounts(appID: String, version: String, names: [String]) async throws -> [String: Int]
    /// Stores the app's grouping rules and, when they changed, starts re-signing its crashes, in
    /// one transaction; returns whether a run started.
    @discardableResult
    func replaceGroupingRules(appID: String, rules: String, now: Int64) async throws -> Bool
    /// Queues the next `limit` crashes of the oldest re-signing run (unless `limit` such jobs wait).
    func queueRegroupBatch(limit: Int, now: Int64) async throws -> CrashStore.RegroupStep
    /// Crashes still to be re-signed under the app's current rules.
    func regroupBacklog(appID: String) async throws -> Int
    /// One page of the app's crashes, newest first, after `cursor`.
    func crashes(appID: String, filter: CrashStore.CrashFilter, limit: Int, cursor: Int64?) async throws
        -> (crashes: [CrashStore.CrashSummary], next: Int64?)
    /// One crash with its symbolicated report (JSON bytes; nil until processed).
    func crash(appID: String, id: String) async throws -> (summary: CrashStore.CrashSummary, report: [UInt8]?)
    /// Where the raw bytes of a crash are: their SHA-256 and size, and the pack holding them.
    func rawObject(appID: String, id: String) async throws -> CrashStore.RawLocation
    /// Deletes a crash; returns the object holding its raw bytes (or their pack) when no other
    /// crash names it. A pack that others keep is noted for compaction by request (its bytes
    /// are erased on the next compaction pass, `leasePackCompactions`).
    func deleteCrash(appID: String, id: String) async throws -> String?
    /// Deletes up to `limit` crashes received before `cutoff`; returns the count and freed objects.
    /// The bytes they leave in packs that other crashes keep are noted as dead for compaction.
    func expireCrashes(receivedBefore cutoff: Int64, limit: Int) async throws -> (deleted: Int, objects: [String])
    /// Leases up to `limit` packs to compact for `lease` milliseconds, with their live members:
    /// those holding bytes of a crash deleted by request, and those whose dead bytes are at least
    /// `deadFraction` of the pack. A leased pack is handed to no other compactor (of any node)
    /// until the lease expires.
    func leasePackCompactions(deadFraction: Double, limit: Int, now: Int64, lease: Int64) async throws -> [CrashStore.PackCompaction]
    /// In one transaction: repoints the crashes of `members` that still name `pack` to `newPack`
    /// (at the members' offsets there) and forgets `pack`'s dead bytes; returns how many moved.
    /// The bytes of members deleted meanwhile are noted for erasure in `newPack`.
    func repointPack(_ pack: String, to newPack: String, members: [CrashStore.PackMember]) async throws -> Int
    /// Build-ids that stored crashes lacked and the app still lacks, most needed first.
    func missingSeen(appID: String, limit: Int) async throws -> [CrashStore.MissingSymbols]
    /// Queues crash `id` for symbolication again; false when there is no such crash.
    func requestResymbolication(appID: String, id: String, now: Int64) async throws -> Bool

    // MARK: Jobs

    /// Frees the leases a previous run of this node left (a store of one node: all of them; a
    /// shared store: none, since other nodes' leases are theirs until they expire).
    func releaseAllLeases() async throws
    /// Leases up to `limit` jobs whose lease is free or expired, for `lease` milliseconds.
    func leaseJobs(limit: Int, now: Int64, lease: Int64) async throws -> [CrashStore.Job]
    /// Extends the leases of jobs `seqs` (still being processed) to `now + lease`.
    func renewLeases(seqs: [Int64], now: Int64, lease: Int64) async throws
    /// Jobs waiting or leased.
    func pendingJobCount() async throws -> Int
    /// What processing crashes `seqs` needs; jobs of deleted crashes are dropped.
    func processingInputs(seqs: [Int64]) async throws -> [Int64: CrashStore.ProcessingInput]
    /// Records outcomes, moves crashes between groups, ends their jobs, in one transaction.
    func finish(_ outcomes: [(seq: Int64, result: CrashStore.ProcessingResult)], now: Int64, spike: CrashStore.SpikeRule) async throws
        -> [String?]
    /// Gives up on a job: the crash is marked failed with `reason`.
    func abandon(seq: Int64, reason: String) async throws
    /// Queues re-symbolication of the app's crashes that lacked one of `buildIDs`.
    @discardableResult
    func requeue(appID: String, newBuildIDs buildIDs: [String], now: Int64) async throws -> Int
    /// Queues every crash whose missing build-ids have been uploaded since.
    @discardableResult
    func requeueResolvable(now: Int64) async throws -> Int
    /// Tells when new jobs may be waiting (another node queued some); nil when the store cannot
    /// tell (one node: the process's own doorbell does).
    var jobNotifications: (any JobNotifications)? { get }

    // MARK: Groups

    /// The app's groups, optionally only those with crashes of `version` or seen since a time.
    func groups(appID: String, version: String?, sinceMilliseconds: Int64?, order: CrashStore.GroupOrder, limit: Int) async throws
        -> [CrashStore.GroupSummary]
    /// One group.
    func group(appID: String, id: String) async throws -> CrashStore.GroupSummary
    /// Sets a group's state.
    func setGroupState(appID: String, id: String, state: CrashStore.GroupState) async throws -> CrashStore.GroupSummary
    /// The app's grouping rules, nil when it has none of its own.
    func groupingRules(appID: String) async throws -> String?

    // MARK: Console reads

    /// The overview of an app at `now`, with `days` days of daily counts.
    func appOverview(appID: String, now: Int64, days: Int) async throws -> CrashStore.AppOverview
    /// A page of the app's groups (keyset paging).
    func groupPage(appID: String, query: CrashStore.GroupQuery, limit: Int) async throws -> CrashStore.GroupPage
    /// The versions any group of the app has crashes of, newest first.
    func crashVersions(appID: String) async throws -> [String]
    /// Crashes per UTC day and version from `sinceMilliseconds` on, optionally of one group.
    func dailyCounts(appID: String, groupID: String?, sinceMilliseconds: Int64) async throws -> [(day: Int64, version: String, count: Int)]
    /// A group's crash count per version (newest first) and hosts (up to `hostLimit`).
    func groupSpread(groupID: String, hostLimit: Int) async throws -> (versions: [(String, Int)], hosts: [String])

    // MARK: People and sessions

    /// Creates an account and returns its one-time password.
    func createUser(name: String, admin: Bool) async throws -> String
    /// Replaces a user's password with a new one-time password, ends their sessions, lifts a lockout.
    func resetPassword(name: String) async throws -> String
    /// Lets `name` see app `appID`.
    func grant(name: String, appID: String) async throws
    /// Every account, by name.
    func listUsers() async throws -> [CrashStore.ConsoleUser]
    /// Checks a password and opens a session, with the per-name lockout.
    func signIn(name: String, password: String, now: Int64) async throws -> CrashStore.SignInOutcome
    /// The live session of a cookie's token, nil when unknown or expired.
    func session(token: String, now: Int64) async throws -> CrashStore.ConsoleSession?
    /// Ends the session of a cookie's token.
    func signOut(token: String) async throws
    /// Forgets the failed sign-ins whose window and lockout have both ended at `now` (the next
    /// attempt would count from one anyway); returns how many names were forgotten.
    func forgetSignInFailures(now: Int64) async throws -> Int
    /// The apps a person may see, oldest first.
    func visibleApps(_ session: CrashStore.ConsoleSession) async throws -> [SymbolStore.App]
    /// The app `appID` when the person may see it; nil otherwise.
    func visibleApp(_ session: CrashStore.ConsoleSession, appID: String) async throws -> SymbolStore.App?

    // MARK: Webhooks

    /// Stores a validated webhook of an existing app.
    func addWebhook(_ new: Webhook.New) async throws -> Webhook
    /// The app's webhooks, oldest first.
    func webhooks(appID: String) async throws -> [Webhook]
    /// Deletes a webhook and its deliveries.
    func removeWebhook(appID: String, id: String) async throws
    /// The newest deliveries of a webhook of the app, newest first.
    func deliveries(appID: String, webhookID: String, limit: Int) async throws -> [CrashStore.Delivery]
    /// Up to `limit` pending deliveries due now and not claimed, oldest first, skipping webhooks in `busy`.
    func dueDeliveries(now: Int64, limit: Int, busy: Set<String>) async throws -> [CrashStore.DueDelivery]
    /// Takes pending delivery `seq` for one attempt until `until`, so that one node sends it;
    /// false when another attempt holds it or it is no longer pending. `recordAttempt` ends the claim.
    func claimDelivery(seq: Int64, now: Int64, until: Int64) async throws -> Bool
    /// Frees the claims a previous run of this node left (one node: all; shared: none, they expire).
    func releaseDeliveryClaims() async throws
    /// Records an attempt of delivery `seq` (and ends its claim).
    func recordAttempt(seq: Int64, _ attempt: CrashStore.DeliveryAttempt) async throws
    /// Deletes deliveries that ended before `cutoff`.
    func expireDeliveries(before cutoff: Int64) async throws
}

/// The tables a report needs, as found in the metadata store.
public struct ReportTables: Sendable {
    /// Table object (SHA-256) by build-id.
    public var byBuildID: [String: String] = [:]
    /// The version's tables by module name, for modules reported without a build-id.
    public var byName: [String: [(buildID: String, sha256: String)]] = [:]

    public init(byBuildID: [String: String] = [:], byName: [String: [(buildID: String, sha256: String)]] = [:]) {
        self.byBuildID = byBuildID
        self.byName = byName
    }
}

/// `MetadataStore.reportTables` on the calling thread (a thread-pool thread that goes on to
/// symbolicate), so that a request does not hop threads for it.
public protocol ImmediateTableReader: Sendable {
    /// See `MetadataStore.reportTables`; never call it from an event loop or a cooperative thread.
    func reportTablesNow(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) throws -> ReportTables
}

/// Wake-ups for idle workers when another node queued jobs (PostgreSQL's LISTEN/NOTIFY).
public protocol JobNotifications: Sendable {
    /// One element per notification (consecutive ones may merge); one consumer.
    var events: AsyncStream<Void> { get }
}

extension MetadataStore {
    /// `createApp` with a random id.
    public func createApp(name: String) async throws -> (app: SymbolStore.App, key: String) {
        try await createApp(name: name, id: nil)
    }

    /// Up to 1,000 build-ids.
    public func missingSeen(appID: String) async throws -> [CrashStore.MissingSymbols] {
        try await missingSeen(appID: appID, limit: 1000)
    }

    /// Two weeks of daily counts.
    public func appOverview(appID: String, now: Int64) async throws -> CrashStore.AppOverview {
        try await appOverview(appID: appID, now: now, days: 14)
    }

    /// Every group's crashes.
    public func dailyCounts(appID: String, sinceMilliseconds: Int64) async throws -> [(day: Int64, version: String, count: Int)] {
        try await dailyCounts(appID: appID, groupID: nil, sinceMilliseconds: sinceMilliseconds)
    }

    /// Up to 100 hosts.
    public func groupSpread(groupID: String) async throws -> (versions: [(String, Int)], hosts: [String]) {
        try await groupSpread(groupID: groupID, hostLimit: 100)
    }

    /// What processing crash `seq` needs; nil when it was deleted meanwhile.
    func processingInput(seq: Int64) async throws -> CrashStore.ProcessingInput? {
        try await processingInputs(seqs: [seq])[seq]
    }

    /// `finish` for one crash; returns its group.
    func finish(seq: Int64, result: CrashStore.ProcessingResult, now: Int64,
                spike: CrashStore.SpikeRule = CrashStore.SpikeRule()) async throws -> String? {
        try await finish([(seq, result)], now: now, spike: spike)[0]
    }

    /// `finish` with the default spike rule.
    func finish(_ outcomes: [(seq: Int64, result: CrashStore.ProcessingResult)], now: Int64) async throws -> [String?] {
        try await finish(outcomes, now: now, spike: CrashStore.SpikeRule())
    }
}
