#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole file, or nil (errno says why). Small files only: the
/// configuration, key and credential files, the status file, the cached users.
package func readFileBytes(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if n == 0 { break }
        bytes.append(contentsOf: buffer[0..<n])
    }
    return bytes
}
