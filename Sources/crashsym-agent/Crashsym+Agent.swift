import ArgumentParser
import CrashsymCommandLine
import FoundationEssentials
import Logging
import ServiceLifecycle
import SymAgent
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym agent`: the collector daemon (docs/agent.md), or one pass with `--once`;
    /// `crashsym agent status` shows its queue; `crashsym agent capture` is the kernel's
    /// `core_pattern` helper.
    struct Agent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Collect crash files from spool directories and forward them to a crashsym server without losing any.",
            discussion: """
                Each file in a spool directory is taken once it is complete: closed by its writer (inotify \
                IN_CLOSE_WRITE) or renamed into the spool, or, for files found at start and with --poll, unchanged \
                for --settle seconds. A sanitizer log (ASAN_OPTIONS=log_path=SPOOL/asan writes asan.<pid>) is taken \
                once it ends with its ==PID==ABORTING line, or once process <pid> is gone. Hidden names and names \
                ending .tmp, .part or ~ are left alone.

                A taken file is moved (rename, syncfs) into the queue under --state-dir before anything else, and \
                leaves it only when the server answered 2xx to POST /api/v1/apps/{app}/crashes, sent with an \
                Idempotency-Key that is the SHA-256 of the file (a retry after a lost answer stores nothing \
                twice; two files with identical bytes are one crash). A 4xx other than 401/403/408/429 moves it to \
                STATE/rejected/ with the server's answer beside it; other failures are retried with exponential \
                backoff and jitter (1 s doubling to 5 min, or the server's Retry-After); 401 and 403 (a wrong key) keep it queued too. Over --max-queue-mb the \
                oldest reports are dropped and counted (`crashsym agent status`). SIGTERM or SIGINT: the upload \
                under way finishes, the queue stays on disk for the next start.

                With --systemd-coredump, the cores systemd-coredump stores (core.COMM.UID.BOOTID.PID.TIME.zst) are \
                each sent once as the compact report `crashsym agent capture` makes of a piped core (threads walked on \
                this host); the store is only read, what was sent is remembered in STATE/coredump-done.

                With --symbols, each report is symbolicated here first (the engine and symbol search of \
                `crashsym symbolicate --symbols`) and sent as crashsym JSON (input_format=crashsym-json), for hosts \
                whose debug files never leave them; a file crashsym cannot read as a report is sent as taken.

                Each crash is sent with host=<host name>, version and environment (when known) as query \
                parameters, and the OS and kernel (uname) in the User-Agent. Its app: the config file's "apps" \
                entry for its program (the report's executable, by absolute path or file name), else its spool's \
                app-id, else --app-id. Its version: that entry's, the spool's or --version, else the version the \
                report states, else the newest version the server knows for the executable's build-id \
                (GET /api/v1/apps/{app}/builds/{build-id}, asked once per build-id and remembered).

                Settings: a flag wins over the environment (CRASHSYM_SERVER, CRASHSYM_APP_ID, CRASHSYM_APP_KEY, \
                CRASHSYM_STATE_DIR, CRASHSYM_VERSION, CRASHSYM_ENVIRONMENT, CRASHSYM_SPOOL with colon-separated \
                directories), which wins over the config file (--config, JSON: {"server", "app-id", "app-key", \
                "state-dir", "version", "environment", "host", "poll", "settle-seconds", "max-queue-mb", \
                "max-reports-per-minute", "connections", "log-level", "metrics-port", "symbols": [path…], "systemd-coredump": true or dir, "spools": [{"path", "app-id", "app-key", "version", "format", "environment"}], \
                "apps": [{"executable", "app-id", "app-key", "version", "environment"}]}), which wins \
                over the defaults. --spool flags replace the file's spools.

                Exit status: 0 stopped cleanly (with --once: every collected report delivered), 1 failure (with \
                --once: reports still queued or refused), 2 usage or configuration error.

                Examples:
                  crashsym agent --config /etc/crashsym/agent.json
                  CRASHSYM_APP_KEY=… crashsym agent --server https://crashes.example.com --app-id demo --spool /var/crash/demo
                  crashsym agent --config agent.json --once
                  crashsym agent status --config agent.json

                Documentation: docs/agent.md.
                """,
            subcommands: [Status.self, Capture.self]
        )

        @Option(help: ArgumentHelp("JSON config file (else $CRASHSYM_AGENT_CONFIG; none: flags and environment only).", valueName: "file"))
        var config: String?

        @Option(help: ArgumentHelp("crashsym server base URL (else $CRASHSYM_SERVER, else \"server\" in the config file).", valueName: "url"))
        var server: String?

        @Option(name: .customLong("app-id"),
                help: ArgumentHelp("App the crashes belong to, as printed by `crashsym apps create` (else $CRASHSYM_APP_ID, else the config file; a spool's own app-id wins).",
                                   valueName: "id"))
        var appID: String?

        @Option(name: .customLong("app-key"),
                help: ArgumentHelp("The app's key (else $CRASHSYM_APP_KEY, else the config file; prefer those: a flag shows in the process list).",
                                   valueName: "key"))
        var appKey: String?

        @Option(name: .customLong("spool"),
                help: ArgumentHelp("Directory to collect crash files from (repeatable; replaces the config file's spools).", valueName: "dir"))
        var spools: [String] = []

        @Option(name: .customLong("state-dir"),
                help: ArgumentHelp("Queue, rejected/ and status (else $CRASHSYM_STATE_DIR, else the config file, else $XDG_STATE_HOME/crashsym-agent, ~/.local/state/crashsym-agent, or /var/lib/crashsym-agent for root). On the spools' filesystem, files are moved, not copied.",
                                   valueName: "dir"))
        var stateDirectory: String?

        @Option(help: ArgumentHelp("App version sent with each crash (else $CRASHSYM_VERSION, else the config file, else the version the report states).", valueName: "version"))
        var version: String?

        @Option(help: ArgumentHelp("Environment sent with each crash, e.g. prod (else $CRASHSYM_ENVIRONMENT, else the config file).", valueName: "name"))
        var environment: String?

        @Option(help: ArgumentHelp("Host name sent with each crash (else the config file, else this machine's).", valueName: "name"))
        var host: String?

        @Flag(help: "List the spools every --settle seconds instead of using inotify (filesystems without inotify, e.g. some network mounts).")
        var poll = false

        @Option(help: ArgumentHelp("Seconds a file not known to be closed must stay unchanged before it is taken (default 2).", valueName: "seconds"))
        var settle: Double?

        @Option(name: .customLong("max-queue-mb"),
                help: ArgumentHelp("Disk the queue may use; past it the oldest reports are dropped and counted (default 256).", valueName: "MiB"))
        var maxQueueMB: Int?

        @Option(name: .customLong("max-reports-per-minute"),
                help: ArgumentHelp("Crash storms: reports of one crash signature kept per minute; the others are deleted and counted per signature in `crashsym agent status` (default 0: no limit).",
                                   valueName: "count"))
        var maxReportsPerMinute: Int?

        @Option(help: ArgumentHelp("Reports sent at once, each over its own connection (default 4; 1 to 64). The server makes each crash durable before it answers, so a few connections keep its disk busy.",
                                   valueName: "count"))
        var connections: Int?

        @Option(name: .customLong("symbols"),
                help: ArgumentHelp("Symbolicate each report on this host before sending it, with symbols from this directory of .csym tables, ELF files or .build-id trees, or this file (repeatable; replaces the config file's \"symbols\"), then the places `crashsym symbolicate` looks. The report is sent as crashsym JSON with its frames resolved; ELF files are converted once into STATE/symbol-cache.",
                                   valueName: "path"))
        var symbols: [String] = []

        @Option(name: .customLong("metrics-port"),
                help: ArgumentHelp("Serve the counters of `status` as Prometheus text on http://127.0.0.1:PORT/metrics (0: a free port, logged at start; updated at most once a second; not with --once).",
                                   valueName: "port"))
        var metricsPort: Int?

        @Flag(name: .customLong("systemd-coredump"),
              help: "Also send the cores systemd-coredump stores (/var/lib/systemd/coredump, or --systemd-coredump-dir), each as a compact report; the store is only read.")
        var systemdCoredump = false

        @Option(name: .customLong("systemd-coredump-dir"),
                help: ArgumentHelp("systemd-coredump's store, when not /var/lib/systemd/coredump (implies --systemd-coredump).", valueName: "dir"))
        var systemdCoredumpDirectory: String?

        @Flag(help: "Take every complete file in the spools, send the queue once (one report at a time), and exit (for cron and tests).")
        var once = false

        @Option(name: .customLong("log-level"),
                help: ArgumentHelp("trace, debug, info (default), notice, warning, error or critical; logs go to standard error.", valueName: "level"))
        var logLevel: String?

        @Option(help: "The format of --once's summary and of `status`: text or json.")
        var format: OutputFormat = .text

        func run() async throws {
            var flags = AgentConfiguration.Flags()
            flags.server = server
            flags.appID = appID
            flags.appKey = appKey
            flags.spools = spools
            flags.stateDirectory = stateDirectory
            flags.version = version
            flags.environment = environment
            flags.host = host
            flags.poll = poll ? true : nil
            flags.settleSeconds = settle
            flags.maxQueueMB = maxQueueMB
            flags.maxReportsPerMinute = maxReportsPerMinute
            flags.connections = connections
            flags.logLevel = logLevel
            flags.symbols = symbols
            flags.metricsPort = metricsPort
            flags.systemdCoredump = systemdCoredumpDirectory ?? (systemdCoredump ? "/var/lib/systemd/coredump" : nil)
            let environmentValues = ProcessInfo.processInfo.environment
            let configuration: AgentConfiguration
            do {
                configuration = try AgentConfiguration.resolve(
                    flags: flags, environment: environmentValues,
                    configFile: config ?? environmentValues["CRASHSYM_AGENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 })
            } catch {
                throw ValidationError(error.description)
            }
            guard !configuration.spools.isEmpty else {
                throw ValidationError("no spool directory: give --spool DIR, CRASHSYM_SPOOL or \"spools\" in the config file")
            }
            guard let level = Logger.Level(rawValue: configuration.logLevel) else {
                throw ValidationError("log-level: \"\(configuration.logLevel)\" is not one of trace, debug, info, notice, warning, error, critical")
            }
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            let logger = Logger(label: "crashsym.agent")
            if once {
                let summary: Collector.Summary
                do {
                    summary = try Collector(configuration: configuration, waker: Waker(), logger: logger).runOnce()
                } catch {
                    FileOutput.standardError("crashsym: \(error)\n")
                    throw ExitCode.failure
                }
                FileOutput.standardOutput(format == .json ? Self.json(summary) : Self.text(summary))
                if summary.remaining > 0 || summary.rejected > 0 { throw ExitCode.failure }
                return
            }
            let service: CollectorService
            do {
                service = try CollectorService(configuration: configuration, logger: logger)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            let group = ServiceGroup(configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm, .sigint],
                                                          logger: logger))
            do {
                try await group.run()
            } catch {
                FileOutput.standardError("crashsym: \(Self.describe(error))\n")
                throw ExitCode.failure
            }
        }

        /// The collector's own error inside a ServiceGroup's wrapper.
        static func describe(_ error: any Error) -> String {
            if let agent = error as? AgentError { return agent.description }
            let text = String(describing: error)
            return text
        }

        static func text(_ summary: Collector.Summary) -> String {
            var line = "taken \(summary.taken), delivered \(summary.delivered), rejected \(summary.rejected), "
                + "dropped \(summary.dropped), suppressed \(summary.suppressed), still queued \(summary.remaining)\n"
            if let failure = summary.failure, summary.remaining > 0 { line += "last failure: \(failure)\n" }
            return line
        }

        static func json(_ summary: Collector.Summary) -> String {
            var json = JSONWriter()
            json.beginObject()
            json.field("delivered", summary.delivered)
            json.field("dropped", summary.dropped)
            if let failure = summary.failure { json.field("failure", failure) } else { json.fieldNull("failure") }
            json.field("rejected", summary.rejected)
            json.field("remaining", summary.remaining)
            json.field("suppressed", summary.suppressed)
            json.field("taken", summary.taken)
            json.endObject()
            return json.text + "\n"
        }

        /// `crashsym agent capture`: the kernel's `core_pattern` pipe helper (docs/agent.md, "Core dumps").
        struct Capture: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Turn a core the kernel pipes in (core_pattern) into a compact crash report in the agent's core spool.",
                discussion: """
                    Installed as the kernel's core pattern (as root; see docs/agent.md):
                      echo '|/usr/bin/crashsym-agent agent capture --state-dir /var/lib/crashsym-agent %P %i %s %t %e' \
                        > /proc/sys/kernel/core_pattern
                    The kernel runs it with the core on standard input and the crash's process id (%P), thread id (%i), \
                    signal (%s), time (%t) and executable name (%e) as arguments. It first reads the process's command \
                    line and the environment variables --env-allow admits from /proc/%P (as root), then takes the \
                    identity of the owner of STATE/cores (the agent's user) and only then reads the core: once, from the \
                    pipe, keeping the notes (threads, registers, signal, mapped files) and only the memory a walk needs \
                    (each thread's stack from its stack pointer up to --max-stack-kb, the first page of each mapped file \
                    for its build-id, the vDSO), at most --max-memory-mb whatever the core's size. Every thread is walked \
                    with the unwind tables of the mapped files on this host (converted once into STATE/symbol-cache, \
                    as with the agent's --symbols) and the frames resolved; the report (crashsym JSON: threads, frames, \
                    the crashed thread's registers, modules with build-ids, signal, command line, environment) is written \
                    durably as STATE/cores/core-TIME-PID-TID-SIGNAL-f-NAME.json, which the running agent sends. The core \
                    is never stored; reading stops once everything needed is kept (the kernel ends the dump there).
                    Over --max-captures-per-minute, the core is not read and a small record of the crash (process, \
                    signal, why) is spooled instead, so the crash is still counted.
                    Takes the agent's --config, --state-dir and --symbols (after `capture`, before the specifiers).
                    Exit status: 0 report or crash record written, 1 nothing could be written, 2 usage.
                    """)

            @ParentCommand var agent: Agent

            @Option(name: .customLong("max-memory-mb"),
                    help: ArgumentHelp("Memory of the core kept at most, in MiB: notes, stacks and first pages (default 64).", valueName: "MiB"))
            var maxMemoryMB: Int = 64

            @Option(name: .customLong("max-stack-kb"),
                    help: ArgumentHelp("Bytes of each thread's stack kept, from its stack pointer up, in KiB (default 512).", valueName: "KiB"))
            var maxStackKB: Int = 512

            @Option(name: .customLong("env-allow"),
                    help: ArgumentHelp("An environment variable of the crashed process to add to the report (repeatable; * matches any characters, but a pattern never admits names holding KEY, TOKEN, SECRET, PASS, CREDENTIAL, AUTH or COOKIE: name those exactly). Default: LANG, LANGUAGE, LC_*, TZ.",
                                       valueName: "name"))
            var envAllow: [String] = []

            @Option(name: .customLong("max-captures-per-minute"),
                    help: ArgumentHelp("Cores walked per minute at most, all programs together; past it only a record of each crash (default 10; 0: no limit).", valueName: "count"))
            var maxCapturesPerMinute: Int = 10

            // Whatever is not an option of `capture` or of `agent` (--config, --state-dir): the
            // specifiers, in order (an executable name may start with a dash).
            @Argument(parsing: .allUnrecognized,
                      help: ArgumentHelp("The core_pattern specifiers %P %i %s %t %e (the name may hold spaces).", valueName: "specifiers"))
            var specifiers: [String] = []

            func validate() throws {
                guard maxMemoryMB >= 1, maxMemoryMB <= 1 << 16 else { throw ValidationError("--max-memory-mb must be between 1 and 65536") }
                guard maxStackKB >= 4, maxStackKB <= 1 << 20 else { throw ValidationError("--max-stack-kb must be between 4 and 1048576") }
                guard maxCapturesPerMinute >= 0 else { throw ValidationError("--max-captures-per-minute must be 0 or more") }
                for name in envAllow where name.isEmpty || name.contains("=") {
                    throw ValidationError("--env-allow '\(name)' is not a variable name or pattern")
                }
                if case .failure(let error) = CoreCapture.Crash.parse(specifiers) { throw ValidationError(error.description) }
            }

            func run() throws {
                let environment = ProcessInfo.processInfo.environment
                let directory: String
                let crash: CoreCapture.Crash
                let configFile = agent.config ?? environment["CRASHSYM_AGENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
                let symbols: [String]
                do {
                    directory = try AgentConfiguration.resolveStateDirectory(flag: agent.stateDirectory, environment: environment,
                                                                             configFile: configFile)
                    symbols = try AgentConfiguration.resolveSymbols(flags: agent.symbols, configFile: configFile)
                    crash = try CoreCapture.Crash.parse(specifiers).get()
                } catch {
                    throw ValidationError("\(error)")
                }
                do {
                    // /proc/PID/environ is readable by root only: read before the identity changes.
                    let process = CrashedProcess.read(pid: crash.pid, allow: envAllow.isEmpty ? CrashedProcess.defaultAllowList : envAllow)
                    let cores = CoreSpool.directory(in: directory)
                    try CoreCapture.dropPrivileges(toOwnerOf: [cores, directory])
                    let symbolication = LocalSymbolication(searchPaths: symbols, cacheDirectory: directory + "/symbol-cache")
                    let limits = CoreCapture.Limits(memoryBytes: maxMemoryMB << 20, stackBytes: maxStackKB << 10, perMinute: maxCapturesPerMinute)
                    let outcome = try CoreCapture.capture(crash, from: 0, into: cores, limits: limits, process: process,
                                                          symbolication: symbolication)
                    switch outcome {
                    case .reported(let path, let bytes):
                        FileOutput.standardError("crashsym: core of pid \(crash.pid) walked: \(path) (\(bytes) bytes)\n")
                    case .dropped(let path, let reason):
                        FileOutput.standardError("crashsym: core of pid \(crash.pid) not read (\(reason)); crash recorded in \(path)\n")
                    }
                } catch {
                    FileOutput.standardError("crashsym: \(error)\n")
                    throw ExitCode.failure
                }
            }
        }

        /// `crashsym agent status`: queue length, last success, last error, drops.
        struct Status: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show an agent's queue length, deliveries, last success, last error and drops.",
                discussion: """
                    Reads the state directory (--state-dir, else $CRASHSYM_STATE_DIR, else "state-dir" in --config, else \
                    the default) without disturbing a running agent; `running` says whether an agent holds it now. \
                    Takes the agent's --config, --state-dir and --format (text or json), e.g. \
                    `crashsym agent status --state-dir /var/lib/crashsym-agent --format json`.
                    Exit status: 0 shown, 1 no state directory there, 2 usage.
                    """)

            /// `--config`, `--state-dir` and `--format` are the agent's own (given after `status`).
            @ParentCommand var agent: Agent

            func run() throws {
                let environment = ProcessInfo.processInfo.environment
                let directory: String
                do {
                    directory = try AgentConfiguration.resolveStateDirectory(
                        flag: agent.stateDirectory, environment: environment,
                        configFile: agent.config ?? environment["CRASHSYM_AGENT_CONFIG"].flatMap { $0.isEmpty ? nil : $0 })
                } catch {
                    throw ValidationError(error.description)
                }
                do {
                    let status = try AgentStatus.read(stateDirectory: directory)
                    FileOutput.standardOutput(agent.format == .json ? status.json() : status.text())
                } catch {
                    FileOutput.standardError("crashsym: \(error)\n")
                    throw ExitCode.failure
                }
            }
        }
    }
}
