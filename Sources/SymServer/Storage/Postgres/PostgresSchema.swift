/// The PostgreSQL schema of the shared metadata store, as numbered migrations (each a list of
/// statements run in one transaction). The tables and columns are those of the SQLite store
/// (SymbolStore.swift, CrashStore*.swift), in PostgreSQL's types.
enum PostgresSchema {
    static let migrations: [(name: String, statements: [String])] = [
        ("v1", [
            """
            CREATE TABLE app (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash BYTEA NOT NULL, created TEXT NOT NULL)
            """,
            """
            CREATE TABLE module (
                app_id TEXT NOT NULL REFERENCES app(id), build_id TEXT NOT NULL, name TEXT NOT NULL, arch TEXT NOT NULL,
                has_dwarf BOOLEAN NOT NULL, symbols_sha256 TEXT NOT NULL, symbols_size BIGINT NOT NULL,
                debug_sha256 TEXT, debug_size BIGINT, created TEXT NOT NULL, PRIMARY KEY (app_id, build_id))
            """,
            "CREATE INDEX module_by_build_id ON module(build_id)",
            """
            CREATE TABLE version (
                app_id TEXT NOT NULL REFERENCES app(id), version TEXT NOT NULL, package TEXT NOT NULL,
                platform TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY (app_id, version))
            """,
            """
            CREATE TABLE version_module (
                app_id TEXT NOT NULL, version TEXT NOT NULL, build_id TEXT NOT NULL, PRIMARY KEY (app_id, version, build_id))
            """,
            """
            CREATE TABLE crash (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE, app_id TEXT NOT NULL,
                received_ms BIGINT NOT NULL, version TEXT NOT NULL, version_given BOOLEAN NOT NULL,
                host TEXT, environment TEXT, input_format TEXT, raw_sha256 TEXT NOT NULL, raw_size BIGINT NOT NULL,
                state TEXT NOT NULL, failure TEXT, format TEXT, signal TEXT, signature TEXT, title TEXT, group_id TEXT,
                report BYTEA, symbolicated_ms BIGINT, missing_build_ids TEXT)
            """,
            "CREATE INDEX crash_by_app ON crash(app_id, seq)",
            "CREATE INDEX crash_by_group ON crash(group_id, seq)",
            "CREATE INDEX crash_by_received ON crash(received_ms)",
            "CREATE INDEX crash_by_raw ON crash(raw_sha256)",
            "CREATE INDEX crash_by_app_received ON crash(app_id, received_ms, version)",
            """
            CREATE TABLE crash_missing (
                app_id TEXT NOT NULL, build_id TEXT NOT NULL, crash_seq BIGINT NOT NULL, module TEXT NOT NULL,
                PRIMARY KEY (app_id, build_id, crash_seq))
            """,
            "CREATE INDEX crash_missing_by_crash ON crash_missing(crash_seq)",
            """
            CREATE TABLE crash_job (
                crash_seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, priority INTEGER NOT NULL,
                lease_until_ms BIGINT NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
                again BOOLEAN NOT NULL DEFAULT FALSE, created_ms BIGINT NOT NULL)
            """,
            "CREATE INDEX crash_job_by_order ON crash_job(priority, crash_seq)",
            """
            CREATE TABLE crash_idempotency (
                app_id TEXT NOT NULL, key TEXT NOT NULL, crash_seq BIGINT NOT NULL, PRIMARY KEY (app_id, key))
            """,
            "CREATE INDEX crash_idempotency_by_crash ON crash_idempotency(crash_seq)",
            """
            CREATE TABLE crash_group (
                id TEXT PRIMARY KEY, app_id TEXT NOT NULL, signature TEXT NOT NULL, title TEXT NOT NULL,
                count BIGINT NOT NULL DEFAULT 0, first_seen_ms BIGINT NOT NULL, last_seen_ms BIGINT NOT NULL,
                state TEXT NOT NULL DEFAULT 'open', resolved_in TEXT, reopened_in TEXT, sample_crash_id TEXT,
                UNIQUE (app_id, signature))
            """,
            """
            CREATE TABLE crash_group_version (
                group_id TEXT NOT NULL, version TEXT NOT NULL, count BIGINT NOT NULL, PRIMARY KEY (group_id, version))
            """,
            "CREATE TABLE crash_group_host (group_id TEXT NOT NULL, host TEXT NOT NULL, PRIMARY KEY (group_id, host))",
            "CREATE TABLE grouping_rules (app_id TEXT PRIMARY KEY, rules TEXT NOT NULL, updated_ms BIGINT NOT NULL)",
            """
            CREATE TABLE webhook (
                id TEXT PRIMARY KEY, app_id TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT,
                format TEXT NOT NULL, created_ms BIGINT NOT NULL)
            """,
            "CREATE INDEX webhook_by_app ON webhook(app_id)",
            """
            CREATE TABLE webhook_delivery (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE, webhook_id TEXT NOT NULL,
                app_id TEXT NOT NULL, event TEXT NOT NULL, group_id TEXT NOT NULL, payload TEXT NOT NULL,
                created_ms BIGINT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_ms BIGINT NOT NULL, last_attempt_ms BIGINT, last_status INTEGER, last_error TEXT,
                last_latency_ms BIGINT, delivered_ms BIGINT, claimed_until_ms BIGINT NOT NULL DEFAULT 0)
            """,
            "CREATE INDEX webhook_delivery_due ON webhook_delivery(state, next_attempt_ms)",
            "CREATE INDEX webhook_delivery_by_webhook ON webhook_delivery(webhook_id, seq)",
            """
            CREATE TABLE crash_group_minute (
                group_id TEXT NOT NULL, minute BIGINT NOT NULL, count BIGINT NOT NULL, PRIMARY KEY (group_id, minute))
            """,
            "CREATE TABLE crash_group_spike (group_id TEXT PRIMARY KEY, notified_ms BIGINT NOT NULL)",
            """
            CREATE TABLE console_user (
                name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, admin BOOLEAN NOT NULL, created_ms BIGINT NOT NULL)
            """,
            "CREATE TABLE console_grant (user_name TEXT NOT NULL, app_id TEXT NOT NULL, PRIMARY KEY (user_name, app_id))",
            """
            CREATE TABLE console_session (
                token_sha256 TEXT PRIMARY KEY, user_name TEXT NOT NULL, csrf TEXT NOT NULL, created_ms BIGINT NOT NULL,
                expires_ms BIGINT NOT NULL)
            """,
            "CREATE INDEX console_session_by_user ON console_session(user_name)",
            """
            CREATE TABLE console_signin_failure (
                name TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_until_ms BIGINT NOT NULL,
                window_start_ms BIGINT NOT NULL DEFAULT 0)
            """,
        ]),
        ("v2-crash-minidumps", [
            // What a Crashpad or Breakpad client sent with a minidump, gone with its crash.
            """
            CREATE TABLE crash_minidump (
                crash_seq BIGINT PRIMARY KEY REFERENCES crash(seq) ON DELETE CASCADE,
                product TEXT, annotations TEXT NOT NULL, attachments TEXT NOT NULL)
            """,
            // Attachment objects by crash; a row outlives its crash until collectOrphanAttachments.
            "CREATE TABLE crash_attachment (crash_seq BIGINT NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (crash_seq, sha256))",
            "CREATE INDEX crash_attachment_by_object ON crash_attachment(sha256)",
        ]),
        ("v3-names-regroup", [
            // Names of modules reported without a build-id that found no table, or several
            // (CrashStore+Names.swift); an upload of that name for the version queues the crash.
            """
            CREATE TABLE crash_missing_name (
                app_id TEXT NOT NULL, version TEXT NOT NULL, name TEXT NOT NULL, crash_seq BIGINT NOT NULL,
                PRIMARY KEY (app_id, version, name, crash_seq))
            """,
            "CREATE INDEX crash_missing_name_by_crash ON crash_missing_name(crash_seq)",
            // The signature frames of each crash, and re-signing runs (CrashStore+Regroup.swift).
            "ALTER TABLE crash ADD COLUMN grouping BYTEA",
            "CREATE TABLE regroup_run (app_id TEXT PRIMARY KEY, next_seq BIGINT NOT NULL, started_ms BIGINT NOT NULL)",
        ]),
        ("v4-agent-counts", [
            // What each agent could not send (CrashStore+Agents.swift).
            """
            CREATE TABLE agent_counts (
                app_id TEXT NOT NULL, agent_id TEXT NOT NULL, host TEXT, dropped BIGINT NOT NULL,
                suppressed BIGINT NOT NULL, reported_ms BIGINT NOT NULL, PRIMARY KEY (app_id, agent_id))
            """,
        ]),
        ("agent-counts-queue", [
            // The agent's queue length as of its last report; the versions of one build-id
            // (CrashStore+Agents.swift, CrashStore+Builds.swift).
            "ALTER TABLE agent_counts ADD COLUMN queue BIGINT",
            "CREATE INDEX version_module_by_build_id ON version_module(app_id, build_id)",
        ]),
        ("crash-system", [
            // The OS and kernel a crash happened on (`?system=`, CrashStore.swift).
            "ALTER TABLE crash ADD COLUMN system TEXT",
        ]),
        ("crash-minidump-version-note", [
            // Why a minidump crash's version is not its ver annotation (CrashStore+Minidumps.swift).
            "ALTER TABLE crash_minidump ADD COLUMN version_note TEXT",
        ]),
        ("crash-raw-pack", [
            // The pack holding a crash's raw bytes and their offset in it (CrashPack.swift); null
            // for crashes stored as single objects named raw_sha256.
            "ALTER TABLE crash ADD COLUMN raw_pack TEXT",
            "ALTER TABLE crash ADD COLUMN raw_offset BIGINT",
            "CREATE INDEX crash_by_raw_pack ON crash(raw_pack)",
        ]),
        ("crash-pack-dead", [
            // The bytes of deleted crashes still inside packs, what compaction rewrites
            // (CrashStore+Compaction.swift).
            """
            CREATE TABLE crash_pack_dead (
                pack TEXT PRIMARY KEY, dead_bytes BIGINT NOT NULL, erase BOOLEAN NOT NULL, lease_until_ms BIGINT NOT NULL)
            """,
            // The packs to erase in order, without reading the others (leasePackCompactions).
            "CREATE INDEX crash_pack_dead_by_erase ON crash_pack_dead(erase, pack)",
        ]),
    ]
}
