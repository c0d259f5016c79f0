import Logging
import ServiceLifecycle

/// The background worker of the crash service: leases crash jobs (new crashes first, then
/// re-symbolication after late symbols) and processes them, `workers` at a time.
///
/// On start it frees every lease (the embedded store belongs to this process alone, so a lease
/// left by a killed process means work to resume) and queues crashes whose missing symbols were
/// committed just before a restart. A ring of the service's doorbell wakes the workers; a ring
/// every second covers anything else.
struct CrashProcessor: Service {
    let service: CrashService
    let workers: Int
    /// How long a job stays leased to a worker without renewal (`--job-lease-seconds`).
    var leaseMilliseconds: Int64 { Int64(service.configuration.jobLeaseSeconds * 1000) }
    /// Jobs leased at once by a worker, processed together and committed in one transaction.
    static let batch = 16

    func run() async throws {
        ProcessingWatch.announce(logger: service.logger)
        let store = service.store
        try await store.releaseAllLeases()
        let resumed = try await store.pendingJobCount()
        let requeued = try await store.requeueResolvable(now: currentMilliseconds())
            + store.requeueResolvableNames(now: currentMilliseconds())

        if resumed > 0 || requeued > 0 {
            service.logger.info("crash processing resumed", metadata: ["crashsym.jobs": "\(resumed)", "crashsym.requeued": "\(requeued)"])
        }
        let doorbell = service.doorbell
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for _ in 0..<workers {
                    group.addTask { await work() }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        doorbell.ring()
                    }
                }
                // Jobs queued by other nodes (PostgreSQL's NOTIFY) wake the idle workers at once.
                if let notifications = store.jobNotifications {
                    group.addTask {
                        for await _ in notifications.events { doorbell.ring() }
                    }
                }
            }
        }
    }

    private func work() async {
        while !Task.isCancelled {
            let jobs: [CrashStore.Job]
            do {
                jobs = try await service.store.leaseJobs(limit: Self.batch, now: currentMilliseconds(), lease: leaseMilliseconds)
            } catch is CancellationError {
                return
            } catch {
                service.logger.error("cannot lease crash jobs", metadata: ["error": "\(error)"])
                await service.doorbell.wait()
                continue
            }
            if jobs.isEmpty {
                await service.doorbell.wait()
                continue
            }
            await processRenewingLeases(jobs)
        }
    }

    /// Processes `jobs` while renewing their leases every third of the lease, so that a long
    /// batch keeps its jobs and a killed node's jobs go to another node one lease later; and
    /// while a watchdog reads the CPU time of the crash in progress: one over
    /// `--max-crash-cpu-seconds` is failed with the reason and the rest of the batch handed back
    /// (no parser the job runs should take that long, but one input is known to: see
    /// docs/http-api.md "Crash processing limits").
    private func processRenewingLeases(_ jobs: [CrashStore.Job]) async {
        let watch = ProcessingWatch()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await service.process(jobs, watch: watch) }
            group.addTask {
                let limit = Duration.milliseconds(Int64(service.configuration.maxCrashCPUSeconds * 1000))
                let every = max(.milliseconds(10), min(.seconds(1), limit / 4))
                while !Task.isCancelled {
                    try? await Task.sleep(for: every)
                    guard let current = watch.current(), current.cpu > limit, watch.abandon(seq: current.seq) else { continue }
                    await service.giveUp(jobs, over: current.seq, id: current.id, cpu: current.cpu)
                    return
                }
            }
            group.addTask {
                let seqs = jobs.map(\.seq)
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(leaseMilliseconds / 3))
                    if Task.isCancelled { return }
                    do {
                        try await service.store.renewLeases(seqs: seqs, now: currentMilliseconds(), lease: leaseMilliseconds)
                    } catch {
                        service.logger.warning("cannot renew crash job leases", metadata: ["error": "\(error)"])
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}

/// Deletes crashes older than the retention period, with their raw bytes, in the background;
/// groups keep their counts.
struct RetentionService: Service {
    let service: CrashService
    let days: Double

    func run() async throws {
        guard days > 0 else {
            // Nothing to do, but a service that returns would stop the group.
            try await gracefulShutdown()
            return
        }
        let period = days * 86_400_000
        // Often enough that nothing outlives the period by more than a tenth of it (at most an hour).
        let interval = Duration.milliseconds(Int64(min(3_600_000, max(500, period / 10))))
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await sweep(cutoff: currentMilliseconds() - Int64(period))
                try? await Task.sleep(for: interval)
            }
        }
    }

    private func sweep(cutoff: Int64) async {
        do {
            while true {
                let (deleted, objects) = try await service.store.expireCrashes(receivedBefore: cutoff, limit: 500)
                // One left behind (the object store is down) is the sweeper's.
                _ = try? await service.objects.removeUnused(objects, in: service.store)
                if deleted > 0 { service.logger.info("retention: crashes deleted", metadata: ["crashsym.crashes": "\(deleted)"]) }
                if deleted < 500 { break }
            }
            // Files attached to minidump crashes that are gone now.
            _ = try? await service.objects.removeUnused(try await service.store.collectOrphanAttachments(), in: service.store)
        } catch is CancellationError {
            // Shutting down (or the server never started): the next start sweeps again.
        } catch {
            service.logger.error("retention sweep failed", metadata: ["error": "\(error)"])
        }
    }
}
