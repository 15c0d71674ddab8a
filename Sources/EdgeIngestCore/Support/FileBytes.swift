#if canImport(Glibc)
import Glibc
#endif

/// Why a small file could not be read: it is missing, not a regular file,
/// larger than its bound, or unreadable. `description` says which, for a
/// message that goes on "Cannot read …: ".
package struct FileReadProblem: Error, CustomStringConvertible, Sendable {
    /// The file does not exist (callers that treat that as "empty" check this).
    package var isMissing = false
    package var path: String
    /// What is wrong, without the path.
    package var reason: String
    /// `'<path>': <reason>`.
    package var description: String { "'\(path)': \(reason)" }
}

/// The size bounds of the small files the agent reads whole.
package enum FileLimits {
    /// The configuration (a file with many types and inputs is still far below).
    package static let configuration = 16 << 20
    /// status.json, the credential cache, key and secret files.
    package static let small = 1 << 20
    /// An account or API-key file of a gateway.
    package static let accounts = 16 << 20
}

/// Reads a whole regular file of at most `limit` bytes. A device, FIFO,
/// socket or directory is refused without reading (opening a FIFO does not
/// wait for a writer), and so is a larger file: every read is bounded.
package func readSmallFile(_ path: String, limit: Int) throws(FileReadProblem) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else {
        throw FileReadProblem(isMissing: errno == ENOENT, path: path, reason: errnoText())
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw FileReadProblem(path: path, reason: errnoText()) }
    guard info.st_mode & S_IFMT == S_IFREG else {
        throw FileReadProblem(
            path: path,
            reason: "not a regular file (a device, FIFO, socket or directory); give the path of a file"
        )
    }
    guard Int(info.st_size) <= limit, let bytes = readAll(fd, limit: limit + 1), bytes.count <= limit else {
        throw FileReadProblem(path: path, reason: "larger than \(limit) bytes, more than such a file can be")
    }
    return bytes
}

/// Reads a whole regular file as UTF-8 text (``readSmallFile(_:limit:)``).
package func readSmallTextFile(_ path: String, limit: Int) throws(FileReadProblem) -> String {
    String(decoding: try readSmallFile(path, limit: limit), as: UTF8.self)
}

/// Reads `fd` to its end, or to `limit` bytes, or nil (errno says why).
package func readAll(_ fd: Int32, limit: Int = .max) -> [UInt8]? {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while bytes.count < limit {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, limit - bytes.count)) }
        if n < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if n == 0 { break }
        bytes.append(contentsOf: buffer[0..<n])
    }
    return bytes
}

/// Replaces `path` with `bytes` atomically (a temporary file renamed over
/// it, mode `mode`): readers see the old or the new file, never a part.
/// With `durable`, the data and the rename are fsynced (credentials, keys);
/// without, a crash may leave the old file (the status file, rewritten
/// every second). On failure the temporary is removed and the error says
/// why; callers word the message (which file, what to do).
package func writeFileAtomically(
    _ path: String,
    _ bytes: [UInt8],
    mode: mode_t = 0o600,
    durable: Bool
) throws(SystemCallFailure) {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw SystemCallFailure() }
    let written = bytes.withUnsafeBytes { buffer -> Bool in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
    let synced = !durable || fsync(fd) == 0
    close(fd)
    guard written, synced, rename(temporary, path) == 0 else {
        let failure = SystemCallFailure()
        unlink(temporary)
        throw failure
    }
    if durable {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let dir = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }
}

/// A system call failed; ``reason`` is `strerror(errno)` taken when it did.
package struct SystemCallFailure: Error, Sendable {
    package let reason: String

    package init() { reason = String(cString: strerror(errno)) }
}
