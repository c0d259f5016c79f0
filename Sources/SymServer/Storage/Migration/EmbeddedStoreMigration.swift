import Foundation
import GRDB
import PostgresNIO
#if canImport(Glibc)
import Glibc
#endif

/// `crashsym migrate`: moves an embedded store (SQLite and the object directory under a data
/// directory) into the shared one (PostgreSQL, and an S3-compatible store when given).
///
/// Objects first, then rows, as every write of the server: a row in the target never names an
/// object the target lacks. Each table is copied row for row in primary-key batches, one
/// transaction each; a row the target holds already is left alone when it is equal, so the copy
/// can be interrupted at any moment (kill -9 included) and run again: the rerun finishes the job
/// and duplicates nothing, and a run after a finished one writes nothing.
///
/// Before writing, a first pass compares every source row with the target's row of the same
/// primary key. A target row that differs is a conflict: the migration refuses, writing nothing,
/// unless `overwrite` (or the target holds an unfinished migration of the same data directory,
/// whose rows it may bring up to date). The source is read from one SQLite snapshot, so a server
/// still writing to it does not make the copy inconsistent (but what it writes later is not
/// copied: stop it first).
///
/// The tables are discovered, not listed: every table of the SQLite store must exist in
/// PostgreSQL with the same columns (a table added to one backend only is an error here).
public struct EmbeddedStoreMigration: Sendable {
    /// What to do.
    public struct Options: Sendable {
        /// Compare and count only; write nothing.
        public var dryRun = false
        /// Replace target rows that differ from the source's.
        public var overwrite = false
        /// Rows per transaction.
        public var batchRows = 400
        /// Objects copied at once.
        public var objectConcurrency = 4

        public init(dryRun: Bool = false, overwrite: Bool = false) {
            self.dryRun = dryRun
            self.overwrite = overwrite
        }
    }

    /// What happened to one table.
    public struct TableCount: Sendable, Equatable {
        public var table: String
        /// Rows in the source.
        public var rows = 0
        /// Rows the target lacked (written, or to be written on a dry run).
        public var inserted = 0
        /// Rows the target held, equal.
        public var identical = 0
        /// Rows the target held, different (replaced, or the conflicts that stopped the run).
        public var different = 0
    }

    /// What happened to the objects.
    public struct ObjectCount: Sendable, Equatable {
        /// Objects in the source.
        public var objects = 0
        /// Copied (or to copy on a dry run), and their bytes.
        public var copied = 0
        public var copiedBytes: UInt64 = 0
        /// Present in the target already.
        public var present = 0
        /// Whether objects stay where they are (no `--object-store`: the target keeps the directory).
        public var stayInPlace = false
    }

    /// The outcome.
    public struct Summary: Sendable {
        public var objects = ObjectCount()
        public var tables: [TableCount] = []
        public var dryRun = false
        public var seconds = 0.0
        /// Whether anything was (or would be) written.
        public var changed: Bool { objects.copied > 0 || tables.contains { $0.inserted > 0 || $0.different > 0 } }
    }

    /// A step of the work, for a progress line.
    public struct Progress: Sendable {
        /// "objects", or "compare <table>", "copy <table>".
        public var phase: String
        public var done: Int
        public var total: Int
    }

    let sourceDirectory: String
    let target: PostgresMetadataStore
    let targetObjects: (any ObjectStore)?
    let options: Options

    /// A migration of the store in `sourceDirectory` into `target` (migrated already) and
    /// `targetObjects` (nil: the objects stay in the source directory, which the nodes share).
    public init(sourceDirectory: String, target: PostgresMetadataStore, targetObjects: (any ObjectStore)?, options: Options) {
        self.sourceDirectory = sourceDirectory
        self.target = target
        self.targetObjects = targetObjects
        self.options = options
    }

    /// Runs it; `progress` is called after each batch. Errors are `StoreError`s, or
    /// `MigrationError` for conflicts and schema differences.
    public func run(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Summary {
        let start = ContinuousClock.now
        let source: SymbolStore
        do {
            source = try SymbolStore(dataDirectory: sourceDirectory, create: false)
        } catch let error as SymbolStore.OpenError {
            throw MigrationError(error.message)
        }
        guard let sourceObjects = source.objects as? DirectoryObjectStore else { throw MigrationError("the source is not a data directory") }
        let snapshot: DatabaseSnapshot
        do {
            snapshot = try source.database.makeSnapshot()
        } catch {
            throw MigrationError("cannot read \(sourceDirectory)/metadata.sqlite: \(error)")
        }
        let sourceID = URL(fileURLWithPath: sourceDirectory).resolvingSymlinksInPath().path
        var summary = Summary(dryRun: options.dryRun)
        let tables = try await plan(snapshot)

        // Pass 1: compare, write nothing.
        let resuming = try await ledger(sourceID)
        var differing: [(table: String, key: String)] = []
        for table in tables {
            var count = TableCount(table: table.name)
            // An empty target table (a fresh database) lacks every row: nothing to compare.
            if try await target.rows(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(Self.quoted(table.name)) LIMIT 1")).isEmpty {
                count.rows = table.rows
                count.inserted = table.rows
                summary.tables.append(count)
                continue
            }
            try await forEachBatch(table, snapshot) { batch, done in
                let found = try await targetRows(table, keys: batch.map(table.key))
                for row in batch {
                    switch found[table.key(row)] {
                    case nil: count.inserted += 1
                    case let existing? where existing == row: count.identical += 1
                    default:
                        count.different += 1
                        if differing.count < 5 { differing.append((table.name, table.describeKey(row))) }
                    }
                }
                count.rows += batch.count
                progress(Progress(phase: "compare \(table.name)", done: done, total: table.rows))
            }
            summary.tables.append(count)
        }
        if !differing.isEmpty && !options.overwrite && !resuming && !options.dryRun {
            let total = summary.tables.reduce(0) { $0 + $1.different }
            throw MigrationError("the target already holds \(total) row(s) with the same keys and other data (first: "
                + differing.map { "\($0.table) \($0.key)" }.joined(separator: ", ")
                + "); nothing was written. Migrate into an empty database, or pass --overwrite to replace those rows with the source's")
        }

        // Objects, then rows.
        let copiedObjects: [StoredObject]
        (summary.objects, copiedObjects) = try await copyObjects(sourceObjects, progress: progress)
        guard !options.dryRun else {
            summary.seconds = Self.seconds(since: start)
            return summary
        }
        let rowWork = summary.tables.contains { $0.inserted + $0.different > 0 }
        if rowWork { try await markStarted(sourceID) }
        for (index, table) in tables.enumerated() where summary.tables[index].inserted + summary.tables[index].different > 0 {
            var written = TableCount(table: table.name)
            try await forEachBatch(table, snapshot) { batch, done in
                let counts = try await write(table, batch)
                written.inserted += counts.inserted
                written.different += counts.replaced
                progress(Progress(phase: "copy \(table.name)", done: done, total: table.rows))
            }
            summary.tables[index].inserted = written.inserted
            summary.tables[index].different = written.different
            summary.tables[index].identical = summary.tables[index].rows - written.inserted - written.different
        }
        // Every time, not only after copying the table: a run killed between its last crash row and
        // this step copies no crash row when run again.
        for table in tables where table.identity != nil { try await resetIdentity(table) }
        // The objects confirmed once their rows have committed: one a sweeper of the target took
        // meanwhile (it looked for rows before they were there) is copied again.
        if rowWork || resuming { try await confirmObjects(copiedObjects, from: sourceObjects, progress: progress) }
        // A run that found everything in place writes nothing, not even the ledger (unless it
        // closes an interrupted run).
        if rowWork || resuming { try await markFinished(sourceID) }
        summary.seconds = Self.seconds(since: start)
        return summary
    }

    // MARK: Tables

    /// A table to copy: its columns with PostgreSQL's types, its primary key.
    struct Table: Sendable {
        var name: String
        var columns: [(name: String, type: ColumnType)]
        /// Indexes into `columns`.
        var primaryKey: [Int]
        /// The identity column (`GENERATED ALWAYS AS IDENTITY`), whose sequence is moved past the copied rows.
        var identity: String?
        var rows: Int

        func key(_ row: [Cell]) -> [Cell] { primaryKey.map { row[$0] } }

        func describeKey(_ row: [Cell]) -> String {
            "(" + primaryKey.map { "\(columns[$0].name)=\(row[$0])" }.joined(separator: ", ") + ")"
        }
    }

    /// The PostgreSQL column types the schema uses.
    enum ColumnType: Sendable, Equatable {
        case text, bigint, integer, smallint, boolean, bytea, double

        init(_ name: String) throws {
            switch name {
            case "text", "character varying": self = .text
            case "bigint": self = .bigint
            case "integer": self = .integer
            case "smallint": self = .smallint
            case "boolean": self = .boolean
            case "bytea": self = .bytea
            case "double precision", "real": self = .double
            default: throw MigrationError("PostgreSQL column type \(name) is not handled by crashsym migrate")
            }
        }
    }

    /// A value, in a form both databases' values convert to.
    enum Cell: Hashable, Sendable, CustomStringConvertible {
        case null, int(Int64), text(String), bytes([UInt8]), bool(Bool), double(Double)

        var description: String {
            switch self {
            case .null: "NULL"
            case .int(let value): String(value)
            case .text(let value): value.count > 80 ? String(value.prefix(80)) + "…" : value
            case .bytes(let value): "<\(value.count) bytes>"
            case .bool(let value): String(value)
            case .double(let value): String(value)
            }
        }
    }

    /// The tables of the source with their PostgreSQL columns, in the order that keeps foreign
    /// keys satisfied (apps first; `crash` before `crash_minidump`).
    func plan(_ snapshot: DatabaseSnapshot) async throws -> [Table] {
        let sqlite: [(name: String, columns: Set<String>, rows: Int)] = try await snapshot.read { db in
            let names = try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name
                """)
            return try names.map { name in
                let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(name.quotedDatabaseIdentifier))").map { $0["name"] as String }
                return (name, Set(columns), try Int.fetchOne(db, sql: "SELECT count(*) FROM \(name.quotedDatabaseIdentifier)") ?? 0)
            }
        }
        var tables: [Table] = []
        for (name, columns, rows) in sqlite {
            let described = try await target.rows("""
                SELECT column_name::text, data_type::text, is_identity::text FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = \(name) ORDER BY ordinal_position
                """)
            guard !described.isEmpty else {
                throw MigrationError("table \(name) of the embedded store has no counterpart in PostgreSQL: "
                    + "this crashsym's two schemas differ (a bug: report it)")
            }
            var table = Table(name: name, columns: [], primaryKey: [], identity: nil, rows: rows)
            for row in described {
                let (column, type, identity) = try row.decode((String, String, String).self)
                table.columns.append((column, try ColumnType(type)))
                if identity == "YES" { table.identity = column }
            }
            let targetColumns = Set(table.columns.map(\.name))
            guard targetColumns == columns else {
                throw MigrationError("table \(name) has other columns in SQLite (\(columns.sorted().joined(separator: ", "))) "
                    + "than in PostgreSQL (\(targetColumns.sorted().joined(separator: ", "))): this crashsym's two schemas differ (a bug: report it)")
            }
            let key = try await target.rows("""
                SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                WHERE i.indrelid = \(name)::regclass AND i.indisprimary
                """).map { try $0.decode(String.self) }
            guard !key.isEmpty else { throw MigrationError("table \(name) has no primary key in PostgreSQL") }
            table.primaryKey = key.compactMap { column in table.columns.firstIndex { $0.name == column } }
            tables.append(table)
        }
        func rank(_ name: String) -> Int { name == "app" ? 0 : name == "crash" ? 1 : 2 }
        return tables.sorted { (rank($0.name), $0.name) < (rank($1.name), $1.name) }
    }

    /// Calls `body` with each batch of the table's source rows (in primary-key order: some
    /// tables are WITHOUT ROWID) and the rows done.
    private func forEachBatch(_ table: Table, _ snapshot: DatabaseSnapshot,
                              _ body: ([[Cell]], Int) async throws -> Void) async throws {
        let columns = table.columns.map { $0.name.quotedDatabaseIdentifier }.joined(separator: ", ")
        let key = table.primaryKey.map { table.columns[$0].name.quotedDatabaseIdentifier }.joined(separator: ", ")
        let from = "SELECT \(columns) FROM \(table.name.quotedDatabaseIdentifier)"
        let first = "\(from) ORDER BY \(key) LIMIT ?"
        let next = "\(from) WHERE (\(key)) > (\(table.primaryKey.map { _ in "?" }.joined(separator: ", "))) ORDER BY \(key) LIMIT ?"
        var after: [DatabaseValue]?
        var done = 0
        let limit = options.batchRows
        while true {
            let start = after
            let (batch, last): ([[Cell]], [DatabaseValue]?) = try await snapshot.read { db in
                var batch: [[Cell]] = []
                var last: [DatabaseValue]?
                let rows = try start.map { try Row.fetchAll(db, sql: next, arguments: StatementArguments($0 + [limit.databaseValue])) }
                    ?? Row.fetchAll(db, sql: first, arguments: [limit])
                for row in rows {
                    last = table.primaryKey.map { row[$0] as DatabaseValue }
                    batch.append(try table.columns.enumerated().map { index, column in
                        try Self.cell(row[index] as DatabaseValue, column.type, table: table.name, column: column.name)
                    })
                }
                return (batch, last)
            }
            guard let last else { return }
            done += batch.count
            try await body(batch, done)
            after = last
        }
    }

    /// An SQLite value as the PostgreSQL column of `type` holds it.
    static func cell(_ value: DatabaseValue, _ type: ColumnType, table: String, column: String) throws -> Cell {
        func bad() -> MigrationError {
            MigrationError("\(table).\(column) holds \(value) in SQLite, which is not a PostgreSQL \(type) value")
        }
        switch (value.storage, type) {
        case (.null, _): return .null
        case (.int64(let number), .bigint), (.int64(let number), .integer), (.int64(let number), .smallint): return .int(number)
        case (.int64(let number), .boolean): return .bool(number != 0)
        case (.int64(let number), .double): return .double(Double(number))
        case (.double(let number), .double): return .double(number)
        case (.double(let number), .bigint) where number.rounded() == number && abs(number) < 9e18: return .int(Int64(number))
        case (.string(let text), .text): return .text(text)
        case (.int64(let number), .text): return .text(String(number))
        case (.blob(let data), .text):
            guard let text = String(data: data, encoding: .utf8) else { throw bad() }
            return .text(text)
        case (.blob(let data), .bytea): return .bytes([UInt8](data))
        case (.string(let text), .bytea): return .bytes(Array(text.utf8))
        default: throw bad()
        }
    }

    /// A PostgreSQL value as a cell.
    static func cell(_ cell: PostgresCell, _ type: ColumnType) throws -> Cell {
        switch type {
        case .text: return try cell.decode(String?.self).map(Cell.text) ?? .null
        case .bigint: return try cell.decode(Int64?.self).map(Cell.int) ?? .null
        case .integer: return try cell.decode(Int32?.self).map { .int(Int64($0)) } ?? .null
        case .smallint: return try cell.decode(Int16?.self).map { .int(Int64($0)) } ?? .null
        case .boolean: return try cell.decode(Bool?.self).map(Cell.bool) ?? .null
        case .bytea: return try cell.decode(ByteBuffer?.self).map { .bytes(Array($0.readableBytesView)) } ?? .null
        case .double: return try cell.decode(Double?.self).map(Cell.double) ?? .null
        }
    }

    static func bind(_ cell: Cell, into binds: inout PostgresBindings) {
        switch cell {
        case .null: binds.appendNull()
        case .int(let value): binds.append(value)
        case .text(let value): binds.append(value)
        case .bytes(let value): binds.append(ByteBuffer(bytes: value))
        case .bool(let value): binds.append(value)
        case .double(let value): binds.append(value)
        }
    }

    /// The target's rows with these primary keys, by key.
    private func targetRows(_ table: Table, keys: [[Cell]], in transaction: PostgresMetadataStore.Transaction? = nil)
        async throws -> [[Cell]: [Cell]] {
        guard !keys.isEmpty else { return [:] }
        var binds = PostgresBindings()
        var tuples: [String] = []
        for key in keys {
            var placeholders: [String] = []
            for cell in key {
                Self.bind(cell, into: &binds)
                placeholders.append("$\(binds.count)")
            }
            tuples.append("(" + placeholders.joined(separator: ", ") + ")")
        }
        let keyColumns = table.primaryKey.map { Self.quoted(table.columns[$0].name) }.joined(separator: ", ")
        let query = PostgresQuery(unsafeSQL: """
            SELECT \(table.columns.map { Self.quoted($0.name) }.joined(separator: ", ")) FROM \(Self.quoted(table.name))
            WHERE (\(keyColumns)) IN (\(tuples.joined(separator: ", ")))
            """, binds: binds)
        let rows: [PostgresRow]
        if let transaction { rows = try await transaction.rows(query) } else { rows = try await target.rows(query) }
        var found: [[Cell]: [Cell]] = [:]
        for row in rows {
            var cells: [Cell] = []
            for (cell, column) in zip(row.makeRandomAccess(), table.columns) { cells.append(try Self.cell(cell, column.type)) }
            found[table.key(cells)] = cells
        }
        return found
    }

    /// Writes one batch in one transaction: rows the target lacks are inserted, rows that differ
    /// replaced (the first pass allowed it), equal ones left alone.
    private func write(_ table: Table, _ batch: [[Cell]]) async throws -> (inserted: Int, replaced: Int) {
        try await target.transaction { db in
            let found = try await targetRows(table, keys: batch.map(table.key), in: db)
            let missing = batch.filter { found[table.key($0)] == nil }
            let changed = batch.filter { row in found[table.key(row)].map { $0 != row } ?? false }
            let names = table.columns.map { Self.quoted($0.name) }
            if !missing.isEmpty {
                var binds = PostgresBindings()
                var tuples: [String] = []
                for row in missing {
                    var placeholders: [String] = []
                    for cell in row {
                        Self.bind(cell, into: &binds)
                        placeholders.append("$\(binds.count)")
                    }
                    tuples.append("(" + placeholders.joined(separator: ", ") + ")")
                }
                let overriding = table.identity == nil ? "" : " OVERRIDING SYSTEM VALUE"
                let inserted = try await db.rows(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(Self.quoted(table.name)) (\(names.joined(separator: ", ")))\(overriding)
                    VALUES \(tuples.joined(separator: ", ")) ON CONFLICT DO NOTHING RETURNING 1
                    """, binds: binds)).count
                guard inserted == missing.count else {
                    throw MigrationError("\(missing.count - inserted) row(s) of \(table.name) clash with other rows of the target "
                        + "on a unique column (same id, other key): the target holds other data; migrate into an empty database")
                }
            }
            for row in changed {
                var binds = PostgresBindings()
                var assignments: [String] = []
                for (index, column) in table.columns.enumerated() where !table.primaryKey.contains(index) {
                    Self.bind(row[index], into: &binds)
                    assignments.append("\(Self.quoted(column.name)) = $\(binds.count)")
                }
                var conditions: [String] = []
                for index in table.primaryKey {
                    Self.bind(row[index], into: &binds)
                    conditions.append("\(Self.quoted(table.columns[index].name)) = $\(binds.count)")
                }
                guard !assignments.isEmpty else { continue }
                try await db.rows(PostgresQuery(unsafeSQL: """
                    UPDATE \(Self.quoted(table.name)) SET \(assignments.joined(separator: ", ")) WHERE \(conditions.joined(separator: " AND "))
                    """, binds: binds))
            }
            return (missing.count, changed.count)
        }
    }

    /// Moves the identity sequence past the copied numbers, so the next crash gets a new one;
    /// leaves it when it is past them already (a rerun writes nothing).
    private func resetIdentity(_ table: Table) async throws {
        guard let column = table.identity else { return }
        let name = Self.quoted(table.name)
        guard let sequence = try await target.rows(PostgresQuery(unsafeSQL: "SELECT pg_get_serial_sequence('\(name)', '\(column)')"))
            .first?.decode(String?.self) else { return }
        guard let (last, called) = try await target.rows(PostgresQuery(unsafeSQL: "SELECT last_value, is_called FROM \(sequence)"))
            .first?.decode((Int64, Bool).self) else { return }
        let highest = try await target.rows(PostgresQuery(unsafeSQL: "SELECT COALESCE(max(\(Self.quoted(column))), 0)::bigint FROM \(name)"))
            .first?.decode(Int64.self) ?? 0
        guard highest >= (called ? last + 1 : last) else { return }
        _ = try await target.rows(PostgresQuery(unsafeSQL: "SELECT setval('\(sequence)', \(highest + 1), false)"))
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func quoted(_ identifier: String) -> String { "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    // MARK: Objects

    /// Copies every object of the source the target lacks (by size: names are content hashes).
    private func copyObjects(_ source: DirectoryObjectStore, progress: @escaping @Sendable (Progress) -> Void) async throws
        -> (ObjectCount, [StoredObject]) {
        var count = ObjectCount()
        let objects = try await source.listAll()
        count.objects = objects.count
        guard let destination = targetObjects else {
            count.stayInPlace = true
            return (count, [])
        }
        let dryRun = options.dryRun
        let width = max(1, options.objectConcurrency)
        @Sendable func copy(_ object: StoredObject) async throws -> (copied: Bool, size: UInt64) {
            if try await destination.size(sha256: object.sha256) == object.size { return (false, object.size) }
            if dryRun { return (true, object.size) }
            try await Self.copy(object, from: source, to: destination)
            return (true, object.size)
        }
        try await withThrowingTaskGroup(of: (copied: Bool, size: UInt64).self) { group in
            var next = 0
            while next < min(width, objects.count) {
                let object = objects[next]
                group.addTask { try await copy(object) }
                next += 1
            }
            var done = 0
            while let result = try await group.next() {
                done += 1
                if result.copied {
                    count.copied += 1
                    count.copiedBytes += result.size
                } else {
                    count.present += 1
                }
                if done % 16 == 0 || done == objects.count { progress(Progress(phase: "objects", done: done, total: objects.count)) }
                if next < objects.count {
                    let object = objects[next]
                    group.addTask { try await copy(object) }
                    next += 1
                }
            }
        }
        return (count, objects)
    }

    /// One object put into `destination` from the source directory.
    static func copy(_ object: StoredObject, from source: DirectoryObjectStore, to destination: any ObjectStore) async throws {
        let scratch = destination.scratchDirectory + "/migrate-" + object.sha256
        // A hard link when the scratch directory is on the same file system; the put consumes it.
        if link(source.path(sha256: object.sha256), scratch) != 0 {
            unlink(scratch)
            try await source.copy(sha256: object.sha256, to: scratch)
        }
        try await destination.put(fileAt: scratch, sha256: object.sha256)
    }

    /// After the rows are committed: each object still in the target, else copied again (as
    /// `ObjectStore.put(files:thenCommit:)` confirms an upload's files).
    private func confirmObjects(_ objects: [StoredObject], from source: DirectoryObjectStore,
                                progress: @escaping @Sendable (Progress) -> Void) async throws {
        guard let destination = targetObjects, !objects.isEmpty else { return }
        let width = max(1, options.objectConcurrency)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0, done = 0
            while next < objects.count || done < next {
                if next < objects.count && next - done < width {
                    let object = objects[next]
                    next += 1
                    group.addTask {
                        if try await !destination.contains(sha256: object.sha256) { try await Self.copy(object, from: source, to: destination) }
                    }
                    continue
                }
                try await group.next()
                done += 1
                if done % 64 == 0 || done == objects.count { progress(Progress(phase: "confirm objects", done: done, total: objects.count)) }
            }
        }
    }

    // MARK: Ledger

    /// Migrations into this database, by source directory: an unfinished one may bring its own
    /// rows up to date on a rerun. Created here rather than in the schema: only `migrate` uses it.
    private func ledger(_ source: String) async throws -> Bool {
        guard !options.dryRun else {
            let exists = try await target.rows("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'crashsym_import'")
            guard !exists.isEmpty else { return false }
            return try await !target.rows("SELECT 1 FROM crashsym_import WHERE source = \(source) AND finished_ms IS NULL").isEmpty
        }
        _ = try await target.rows("""
            CREATE TABLE IF NOT EXISTS crashsym_import (source TEXT PRIMARY KEY, started_ms BIGINT NOT NULL, finished_ms BIGINT)
            """)
        return try await !target.rows("SELECT 1 FROM crashsym_import WHERE source = \(source) AND finished_ms IS NULL").isEmpty
    }

    private func markStarted(_ source: String) async throws {
        let now = currentMilliseconds()
        _ = try await target.rows("""
            INSERT INTO crashsym_import (source, started_ms) VALUES (\(source), \(now))
            ON CONFLICT (source) DO UPDATE SET started_ms = \(now), finished_ms = NULL
            """)
    }

    private func markFinished(_ source: String) async throws {
        _ = try await target.rows("UPDATE crashsym_import SET finished_ms = \(currentMilliseconds()) WHERE source = \(source)")
    }
}

/// Why a migration stopped, in one line that says what to do.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
