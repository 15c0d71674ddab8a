#if canImport(Glibc)
import Glibc
#endif

/// The machine's host name, or "unknown".
package func hostName() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
    return String(cBuffer: buffer)
}
