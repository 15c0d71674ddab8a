#if canImport(Glibc)
import Glibc
#endif

/// The kernel's view of this process's threads, read from /proc: what
/// ``JobLoop/awaitStall(checkingEvery:)`` needs to tell a blocked thread
/// from a busy one, as libdispatch does for its workers.
enum ThreadState {
    /// The calling thread's kernel id (what /proc/self/task lists); -1 if
    /// /proc is not mounted.
    static func currentID() -> Int32 {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return -1 }
        // "/proc/PID/task/TID"
        var id: Int32 = 0
        var index = count - 1
        var scale: Int32 = 1
        while index >= 0, let digit = UInt8(exactly: buffer[index]), digit >= 0x30, digit <= 0x39 {
            id += Int32(digit - 0x30) * scale
            scale *= 10
            index -= 1
        }
        return scale > 1 ? id : -1
    }

    /// Whether thread `id` of this process is running or waiting for a CPU
    /// (state R in /proc/self/task/ID/stat). True when it cannot be read,
    /// so that an unreadable /proc never makes a busy thread look stuck.
    static func isRunnable(_ id: Int32) -> Bool {
        guard id > 0 else { return true }
        let descriptor = open("/proc/self/task/\(id)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return true }
        // "TID (comm) S ...": the state follows the last ')' (comm may hold one).
        guard let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")), close + 2 < count else { return true }
        return buffer[close + 2] == UInt8(ascii: "R")
    }
}
