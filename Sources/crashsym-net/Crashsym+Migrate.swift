import ArgumentParser
import CrashsymCommandLine
import Foundation
import Logging
import Symbolication
import SymServer
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym migrate`: an embedded store into the shared one (EmbeddedStoreMigration).
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move an embedded store (SQLite and files under a data directory) into PostgreSQL and an S3 store.",
            discussion: """
                Copies every object of --from-data-dir into --object-store (those it lacks), then every row \
                of every table into --database (apps and their hashed keys, versions and modules, crashes \
                with their jobs, groups, grouping rules, webhooks and their outbox, console users and \
                sessions, attachments…), one transaction per batch. Stop the server of the data directory \
                first. The command may be interrupted at any moment and run again: the rerun finishes the \
                job and duplicates nothing; a run after a finished one writes nothing.

                It refuses, writing nothing, when the database holds other data under the same keys (an \
                app id, a crash number…), unless --overwrite. Without --object-store the objects stay in \
                the data directory, which the nodes then share as their --data-dir. --database and \
                --object-store are read as `serve` reads them (flag, CRASHSYM_DATABASE, \
                CRASHSYM_OBJECT_STORE, --config; CRASHSYM_DATABASE_PASSWORD, AWS_ACCESS_KEY_ID, …).

                Example:
                  crashsym migrate --from-data-dir /var/lib/crashsym --dry-run \\
                      --database postgres://crashsym@db/crashsym --object-store 's3://crashsym/prod/?endpoint=http://s3:8333'
                  crashsym migrate --from-data-dir /var/lib/crashsym \\
                      --database postgres://crashsym@db/crashsym --object-store 's3://crashsym/prod/?endpoint=http://s3:8333'
                """
        )

        @Option(name: .customLong("from-data-dir"), help: ArgumentHelp("The embedded store to copy: the --data-dir of its `crashsym serve`.", valueName: "dir"))
        var fromDataDirectory: String

        @Option(help: ArgumentHelp("The PostgreSQL database to fill: postgres://user@host[:port]/database[?sslmode=…] (env CRASHSYM_DATABASE; password from the URL or CRASHSYM_DATABASE_PASSWORD).", valueName: "url"))
        var database: String?

        @Option(name: .customLong("object-store"), help: ArgumentHelp("The object store to fill: s3://bucket/prefix?endpoint=http://host:port&region=… (env CRASHSYM_OBJECT_STORE; credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); without it the objects stay in --from-data-dir.", valueName: "url"))
        var objectStore: String?

        @Option(help: ArgumentHelp("JSON config file of `serve` to read database and object-store from (env CRASHSYM_CONFIG).", valueName: "file"))
        var config: String?

        @Flag(name: .customLong("dry-run"), help: "Compare and count what would be copied; write nothing.")
        var dryRun = false

        @Flag(help: "Replace rows of the database that have the source's keys but other data (default: refuse).")
        var overwrite = false

        @Option(name: .customLong("batch-rows"), help: "Rows copied per transaction.")
        var batchRows = 400

        @Option(help: "Output format of the summary: text or json.")
        var format: OutputFormat = .text

        func validate() throws {
            guard batchRows >= 1 && batchRows <= 2000 else { throw ValidationError("--batch-rows is 1 to 2000") }
        }

        func run() async throws {
            let configuration: ServerConfiguration
            do {
                var flags = ["data-dir": fromDataDirectory]
                flags["database"] = database
                flags["object-store"] = objectStore
                configuration = try ServerConfiguration.resolve(flags: flags, configFile: config)
            } catch {
                throw ValidationError("\(error)")
            }
            guard let database = configuration.database else {
                throw ValidationError("--database postgres://… is required: the database to migrate into")
            }
            do {
                _ = try PostgresMetadataStore.Location(url: database)
            } catch {
                throw ValidationError((error as? StoreError)?.message ?? "\(error)")
            }
            guard access(fromDataDirectory + "/metadata.sqlite", F_OK) == 0 else {
                FileOutput.standardError("crashsym: \(fromDataDirectory) holds no crashsym store (no metadata.sqlite): check --from-data-dir\n")
                throw ExitCode.failure
            }
            var logger = Logger(label: "crashsym.migrate")
            logger.logLevel = .critical
            let objects: (any ObjectStore)?
            do {
                objects = try configuration.objectStorage.makeStore(dataDirectory: fromDataDirectory)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            var chosen = EmbeddedStoreMigration.Options(dryRun: dryRun, overwrite: overwrite)
            chosen.batchRows = batchRows
            let options = chosen
            let source = fromDataDirectory
            let terminal = isatty(2) == 1
            let summary: EmbeddedStoreMigration.Summary
            do {
                summary = try await PostgresMetadataStore.with(
                    url: database, password: ProcessInfo.processInfo.environment["CRASHSYM_DATABASE_PASSWORD"], logger: logger) { store in
                    let migration = EmbeddedStoreMigration(sourceDirectory: source, target: store, targetObjects: objects, options: options)
                    return try await migration.run { progress in
                        guard terminal else { return }
                        FileOutput.standardError("\r\u{1B}[K\(progress.phase): \(progress.done)/\(progress.total)")
                    }
                }
            } catch {
                if terminal { FileOutput.standardError("\r\u{1B}[K") }
                let message = (error as? MigrationError)?.message ?? (error as? StoreError)?.message ?? "\(error)"
                FileOutput.standardError("crashsym: \(message)\n")
                throw ExitCode.failure
            }
            if terminal { FileOutput.standardError("\r\u{1B}[K") }
            FileOutput.standardOutput(format == .json ? Self.json(summary) : Self.text(summary))
        }

        static func text(_ summary: EmbeddedStoreMigration.Summary) -> String {
            let verb = summary.dryRun ? "would copy" : "copied"
            var text = summary.dryRun ? "dry run: nothing written\n" : ""
            let objects = summary.objects
            if objects.stayInPlace {
                text += "objects: \(objects.objects) stay in the data directory (no --object-store)\n"
            } else {
                text += "objects: \(objects.objects), \(verb) \(objects.copied) (\(objects.copiedBytes) bytes), \(objects.present) present\n"
            }
            let width = summary.tables.map(\.table.count).max() ?? 0
            for table in summary.tables where table.rows > 0 {
                let name = table.table.padding(toLength: width, withPad: " ", startingAt: 0)
                text += "\(name)  \(table.rows) rows: \(verb) \(table.inserted), identical \(table.identical)"
                    + (table.different > 0 ? ", different \(table.different)\(summary.dryRun ? "" : " (replaced)")" : "") + "\n"
            }
            let rows = summary.tables.reduce(0) { $0 + $1.rows }
            text += String(format: "%d rows in %d tables, %.1f s", rows, summary.tables.count, summary.seconds)
                + (summary.changed ? "" : "; the target already held everything") + "\n"
            return text
        }

        static func json(_ summary: EmbeddedStoreMigration.Summary) -> String {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("dry_run", summary.dryRun)
            writer.field("changed", summary.changed)
            writer.beginObject("objects")
            writer.field("objects", summary.objects.objects)
            writer.field("copied", summary.objects.copied)
            writer.field("copied_bytes", summary.objects.copiedBytes)
            writer.field("present", summary.objects.present)
            writer.field("stay_in_place", summary.objects.stayInPlace)
            writer.endObject()
            writer.beginArray("tables")
            for table in summary.tables {
                writer.beginObject()
                writer.field("table", table.table)
                writer.field("rows", table.rows)
                writer.field("inserted", table.inserted)
                writer.field("identical", table.identical)
                writer.field("different", table.different)
                writer.endObject()
            }
            writer.endArray()
            writer.field("milliseconds", Int(summary.seconds * 1000))
            writer.endObject()
            return writer.text + "\n"
        }
    }
}
