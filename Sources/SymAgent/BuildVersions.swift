import Synchronization

/// The versions the server knows for executables' build-ids (`GET …/builds/{build-id}`), as the
/// agent learnt them: each app and build-id is asked once and remembered, for a crash whose
/// version neither the configuration nor the report gives. Shared by the sender threads.
public final class BuildVersions: Sendable {
    /// What the server said of one build-id.
    public enum Answer: Sendable, Equatable {
        /// The newest version whose upload named it.
        case version(String)
        /// The app has no module with it (not uploaded yet, or not the app's).
        case unknown
    }

    private struct Entry {
        var answer: Answer
        var expires: ContinuousClock.Instant
    }

    /// How long a version is remembered (a build-id's versions only grow: a later upload of the
    /// same binary under a new version is learnt after this).
    let knownFor: Duration
    /// How long "unknown" is remembered (the build may be uploaded after its first crash).
    let unknownFor: Duration
    /// Build-ids remembered at most; past it the expired ones go, then all.
    static let capacity = 4096
    private let entries = Mutex<[String: Entry]>([:])

    /// An empty memory.
    public init(knownFor: Duration = .seconds(3600), unknownFor: Duration = .seconds(300)) {
        self.knownFor = knownFor
        self.unknownFor = unknownFor
    }

    /// The remembered answer for `buildID` of `appID` (nil: ask the server).
    func answer(appID: String, buildID: String, now: ContinuousClock.Instant = .now) -> Answer? {
        entries.withLock { entries in
            guard let entry = entries[appID + "/" + buildID], entry.expires > now else { return nil }
            return entry.answer
        }
    }

    /// Remembers the server's answer.
    func remember(_ answer: Answer, appID: String, buildID: String, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { $0.value.expires > now }
                if entries.count >= Self.capacity { entries.removeAll() }
            }
            let lifetime = answer == .unknown ? unknownFor : knownFor
            entries[appID + "/" + buildID] = Entry(answer: answer, expires: now + lifetime)
        }
    }
}
