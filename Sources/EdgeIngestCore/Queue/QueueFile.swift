#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File-system work around a queue file: its directory (0700), the file
/// itself (0600), the process lock, and quarantine of a damaged file.
package enum QueueFile {
    /// Creates the file's directory (and missing parents) with mode 0700,
    /// and the file with mode 0600 if it does not exist — atomically: an
    /// empty queue in the current format is written under a temporary name
    /// and renamed into place, so a crash never leaves a 0-byte queue file.
    /// An existing 0-byte file (with no write-ahead log beside it) is
    /// therefore damage — a truncated file — and is refused, not silently
    /// started afresh.
    package static func prepare(path: String) throws {
        let directory = parentDirectory(of: path)
        try makeDirectories(directory)
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "The queue path '\(path)' exists but is not a regular file. Point the queue at a file."
                )
            }
            return
        }
        let temporary = path + ".creating"
        unlink(temporary)
        let fd = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw EdgeIngestError(
                .queueUnavailable,
                "Cannot create the queue file '\(path)': \(errnoText()). Check that '\(directory)' is writable by this user."
            )
        }
        close(fd)
        do {
            // Made complete under the temporary name: the tables, and the
            // switch to WAL mode (a rollback-journal transaction of its own;
            // made after the rename, a power cut could leave a hot journal
            // beside the queue, which read-only opens such as `ingestd
            // verify` cannot roll back). synchronous=FULL; closing the last
            // connection checkpoints the WAL into the file and removes it,
            // so the header and the tables are on disk before the rename.
            _ = try QueueStore(
                db: SQLiteConnection(path: temporary, displayName: path),
                isFile: true,
                durability: .powerLossSafe
            )
            guard rename(temporary, path) == 0 else {
                throw EdgeIngestError(.queueUnavailable, "Cannot create the queue file '\(path)': \(errnoText()).")
            }
            syncDirectory(directory)
        } catch {
            for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temporary + suffix) }
            throw error
        }
    }

    /// Whether the file exists with 0 bytes and no write-ahead log beside
    /// it: a queue file is never empty (``prepare(path:)``), so it was truncated.
    static func isTruncated(path: String) -> Bool {
        access(path, F_OK) == 0 && size(of: path) == 0 && size(of: path + "-wal") == 0
    }

    /// Refuses a truncated file (``isTruncated(path:)``).
    static func checkNotTruncated(path: String) throws {
        guard isTruncated(path: path) else { return }
        throw EdgeIngestError(
            .queueCorrupt,
            "The queue file '\(path)' is empty (0 bytes): a queue file is never empty, so it was truncated (a full disk, a failed copy?) and whatever it held is gone. It was left untouched: move it aside to start a new queue, or restore it from a backup."
        )
    }

    private static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Takes an exclusive `flock` on the file, held until `fd` is closed, so
    /// that two processes never append to one queue. Returns the descriptor.
    ///
    /// A lock that is taken is retried for up to `patienceMilliseconds`
    /// before the queue counts as in use: a child process forked by this one
    /// (an app spawning a helper, a test starting a server) shares the
    /// descriptor — and the flock — from `fork` until its `exec` closes it
    /// (O_CLOEXEC), so a queue closed and reopened at that moment would
    /// otherwise be refused by its own process.
    static func lock(path: String, patienceMilliseconds: Int = 1_000) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw EdgeIngestError(.queueUnavailable, "Cannot open the queue file '\(path)': \(errnoText()).")
        }
        var waited = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EWOULDBLOCK, waited < patienceMilliseconds {
                usleep(10_000)
                waited += 10
                continue
            }
            let reason =
                errno == EWOULDBLOCK
                ? "another process has it open (is another ingestd running with this queue?)" : errnoText()
            close(fd)
            throw EdgeIngestError(.queueUnavailable, "The queue '\(path)' is in use: \(reason).")
        }
        return fd
    }

    /// Renames the file and its `-wal`/`-shm` companions to
    /// `<path>.corrupt-<ms>`; returns the new name of the main file.
    static func quarantine(path: String, now: Int64) throws -> String {
        let target = "\(path).corrupt-\(now)"
        for suffix in ["", "-wal", "-shm"] where access(path + suffix, F_OK) == 0 {
            guard rename(path + suffix, target + suffix) == 0 else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "Cannot move the damaged queue '\(path)' aside: \(errnoText())."
                )
            }
        }
        return target
    }

    static func closeDescriptor(_ fd: Int32) {
        close(fd)
    }

    static func size(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    package static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Creates `directory` and missing parents with mode 0700.
    package static func makeDirectories(_ directory: String) throws {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "'\(directory)' exists but is not a directory, so nothing can be created in it."
                )
            }
            return
        }
        let parent = parentDirectory(of: directory)
        if parent != directory { try makeDirectories(parent) }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw EdgeIngestError(
                .queueUnavailable,
                "Cannot create the directory '\(directory)': \(errnoText()). Create it, or point the configuration elsewhere."
            )
        }
    }
}

package func errnoText(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
