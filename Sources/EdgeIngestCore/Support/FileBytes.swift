#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole file, or nil (errno says why). Small files only: the
/// configuration, key and credential files, the status file, the cached users.
package func readFileBytes(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    return readAll(fd)
}

/// Reads a whole file as UTF-8 text, or nil (errno says why).
package func readTextFile(_ path: String) -> String? {
    readFileBytes(path).map { String(decoding: $0, as: UTF8.self) }
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
