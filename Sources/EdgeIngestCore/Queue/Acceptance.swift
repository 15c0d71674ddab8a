import CClock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// When, on which clock, a segment's records were accepted (format 4): the
/// boot, the boot-time clock at the commit, and whether the wall clock
/// could be trusted then. A box without a battery-backed clock boots at
/// 1970 or at the last saved time, so the wall-clock `enqueued_at` of
/// what it accepts before NTP answers is wrong; the boot-time clock is
/// not, and once the wall clock is known within that boot, the true
/// acceptance time is `acceptedBoottime + offset` (the `boots` table).
struct Acceptance: Hashable {
    /// The first 8 bytes of the kernel's boot id, big-endian (the same
    /// value in every file: a copy keeps it).
    var boot: Int64
    /// Milliseconds on `CLOCK_BOOTTIME` (counts through suspend).
    var boottime: Int64
    /// The wall clock then: 1 synchronised, 0 not, nil unknown.
    var clock: Int64?

    /// Now, in this boot.
    static func now() -> Acceptance {
        Acceptance(
            boot: BootIdentity.current.key,
            boottime: bootTimeMilliseconds(),
            clock: ClockSynchronisation.state()
        )
    }
}

/// The kernel's id of the running boot (`/proc/sys/kernel/random/boot_id`),
/// read once per process.
struct BootIdentity: Hashable {
    /// The 16 bytes of the boot id.
    var bytes: [UInt8]
    /// Its first 8 bytes as a big-endian integer.
    var key: Int64 {
        bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    static let current: BootIdentity = read() ?? BootIdentity(bytes: [UInt8](repeating: 0, count: 16))

    /// The boot id from its text (`8c1b…-…`), or nil when unreadable.
    static func read(path: String = "/proc/sys/kernel/random/boot_id") -> BootIdentity? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parse(buffer[..<count])
    }

    /// 32 hexadecimal digits, dashes and a line end ignored.
    static func parse(_ text: ArraySlice<UInt8>) -> BootIdentity? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text where character != UInt8(ascii: "-") && character != UInt8(ascii: "\n") {
            let digit: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        guard bytes.count == 16, high == nil else { return nil }
        return BootIdentity(bytes: bytes)
    }
}

/// Milliseconds on `CLOCK_BOOTTIME`: since boot, through suspend.
package func bootTimeMilliseconds() -> Int64 {
    var now = timespec()
    #if os(Linux)
    clock_gettime(CLOCK_BOOTTIME, &now)
    #else
    clock_gettime(CLOCK_MONOTONIC, &now)
    #endif
    return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
}

/// Whether the system's wall clock is synchronised: the kernel's NTP
/// status (`adjtimex`, read-only), else systemd-timesyncd's flag file.
/// Under the packaged unit's `ProtectClock=` the kernel call is refused
/// (EPERM); timesyncd's flag file then decides (present: synchronised;
/// absent while its directory exists: not yet), and without timesyncd the
/// state is unknown. ``use(_:)`` replaces both: a flag file (GPS or chrony
/// set-ups that signal through a file), or "always" (a battery-backed
/// clock, a VM whose host keeps its time). Read at most once a second.
package enum ClockSynchronisation {
    /// Where the state comes from.
    package enum Source: Sendable, Equatable {
        /// The kernel's NTP status, else systemd-timesyncd's flag (the default).
        case automatic
        /// Synchronised exactly while this file exists.
        case flagFile(String)
        /// Always synchronised.
        case always
    }

    private static let cache = PlainMutex((at: Int64?.none, state: Int64?.none))
    private static let source = PlainMutex(Source.automatic)

    /// systemd-timesyncd's flag: present once it synchronised the clock.
    static let timesyncdFlag = "/run/systemd/timesync/synchronized"

    /// 1 synchronised, 0 not, nil unknown.
    package static func state() -> Int64? {
        let now = bootTimeMilliseconds()
        return cache.withLock { cached in
            if let at = cached.at, now - at < 1_000 { return cached.state }
            cached = (now, read())
            return cached.state
        }
    }

    /// From now on the state comes from `source`.
    package static func use(_ source: Source) {
        self.source.withLock { $0 = source }
        cache.withLock { $0 = (nil, nil) }
    }

    /// Shorthand: the clock counts as synchronised exactly while `path`
    /// exists (nil: ``Source/automatic``).
    package static func useFlagFile(_ path: String?) { use(path.map(Source.flagFile) ?? .automatic) }

    private static func read() -> Int64? {
        switch source.withLock({ $0 }) {
        case .always: return 1
        case .flagFile(let path): return access(path, F_OK) == 0 ? 1 : 0
        case .automatic:
            let kernel = edgeingest_clock_synchronised()
            if kernel >= 0 { return Int64(kernel) }
            if access(timesyncdFlag, F_OK) == 0 { return 1 }
            if access("/run/systemd/timesync", F_OK) == 0 { return 0 }
            return nil
        }
    }
}
