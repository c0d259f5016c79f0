import Logging
import ServiceLifecycle

/// Signs an app's crashes again after its grouping rules changed (`PUT …/grouping-rules`): it
/// turns each stored run (CrashStore+Regroup.swift) into crash jobs a batch at a time, never far
/// ahead of the workers, which process each crash again under the new rules and move it between
/// groups. A run survives a restart where it stopped.
struct RegroupService: Service {
    let service: CrashService
    /// Crashes queued at a time, and the most re-signing jobs left waiting before more are queued.
    static let batch = 500

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let step = try await service.store.queueRegroupBatch(limit: Self.batch, now: currentMilliseconds())
                    if step.queued > 0 { service.doorbell.ring() }
                    if step.remaining {
                        // The workers are behind: wait for them rather than fill the queue.
                        if step.queued == 0 { try? await Task.sleep(for: .milliseconds(200)) }
                        continue
                    }
                } catch is CancellationError {
                    return
                } catch {
                    // Stored runs are retried on the next ring, or after a restart.
                    service.logger.error("regroup: cannot queue crashes", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: .seconds(1))
                    continue
                }
                await service.regroupBell.wait()
            }
        }
    }
}
