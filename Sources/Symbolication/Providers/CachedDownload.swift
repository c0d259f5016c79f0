#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymHTTP

/// One file fetched over HTTP into a local cache, with its remembered miss: the piece the two
/// HTTP providers share (`ServerTableProvider`'s tables, `DebuginfodProvider`'s debug files).
/// A file arrives whole or not at all (libcurl writes beside it and renames); a miss (every
/// server answered 404) is a marker file whose age says when to ask again.
struct CachedDownload {
    /// Where a miss is remembered.
    enum MissMarker {
        /// An empty file without permissions at the entry's own path, as elfutils' client writes
        /// it (its cache is shared with gdb and `debuginfod-find`).
        case emptyEntry
        /// A file of its own at this path.
        case file(String)
    }

    /// What the cache holds for the entry.
    enum State: Equatable {
        /// The file (not empty).
        case present
        /// A miss remembered less than the expiry ago.
        case miss
        /// Nothing (an expired miss is forgotten).
        case absent
    }

    /// The cached file.
    let path: String
    /// The directory holding `path` (created on first download).
    let directory: String
    /// Where a miss is remembered.
    let missMarker: MissMarker
    /// Seconds a miss is remembered.
    let missExpiry: Int64

    private var missPath: String {
        switch missMarker {
        case .emptyEntry: path
        case .file(let marker): marker
        }
    }

    /// What the cache holds now; an expired miss marker is removed.
    func state() -> State {
        var status = stat()
        if stat(path, &status) == 0 && status.st_size > 0 { return .present }
        guard stat(missPath, &status) == 0 else { return .absent }
        let age = Int64(time(nil)) - Int64(status.st_mtim.tv_sec)
        if age >= 0 && age < missExpiry { return .miss }
        unlink(missPath)
        return .absent
    }

    /// Downloads `url` into `path` (whole or not at all): the HTTP status, or why there was none.
    /// A 200 forgets any remembered miss.
    func download(_ url: String, headers: [String] = [], maxBytes: UInt64, connectTimeout: Duration,
                  progress: (@Sendable (String) -> Void)? = nil) -> Result<Int, TransferFailure> {
        do {
            try FileSystem.createDirectory(directory)
        } catch {
            return .failure(TransferFailure(kind: .io, message: "\(error)", retryable: false))
        }
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer()
        } catch {
            return .failure(error)
        }
        progress?("Downloading from \(url)")
        // A slow server may take long for a big file, as long as it keeps sending.
        let outcome = transfer.download(url, headers: headers, to: path, maxBytes: maxBytes, userAgent: "crashsym",
                                        timeout: .seconds(24 * 3600), connectTimeout: connectTimeout,
                                        stallTimeout: connectTimeout).map(\.status)
        if case .success(200) = outcome, case .file(let marker) = missMarker { unlink(marker) }
        return outcome
    }

    /// Remembers that no server has the file (best effort: a cache that cannot be written only
    /// costs a request later).
    func rememberMiss() {
        guard (try? FileSystem.createDirectory(directory)) != nil else { return }
        let mode: mode_t = if case .emptyEntry = missMarker { 0 } else { 0o644 }
        let descriptor = open(missPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Removes the downloaded file (it turned out not to be the module's).
    func discard() {
        unlink(path)
    }
}
