import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// The memory limit the agent runs under: the smallest cgroup v2
/// `memory.max` on the path of its own control group (`MemoryMax=` of
/// its unit, or of a slice above it), read once at start.
///
/// Under a limit too small for the agent, the kernel kills it when it is
/// busy (a backlog to drain, a gateway's clients) and systemd starts it
/// again: a kill loop that collects nothing and says nothing. The agent
/// refuses such a limit at start instead, with a message and exit code 78,
/// which the packaged unit does not restart (`RestartPreventExitStatus=`).
///
/// ```swift
/// if let limit = MemoryLimit.ofThisProcess(), let refusal = limit.refusal(for: configuration) {
///     logger.critical("\(refusal)")
/// }
/// ```
package struct MemoryLimit: Sendable, Equatable {
    /// The limit in bytes.
    package var bytes: Int64
    /// The control group that sets it, as /proc/self/cgroup names it
    /// (`/system.slice/ingestd.service`).
    package var cgroup: String

    /// What the agent needs at least, measured under systemd as PID 1 with
    /// scripts/test-memory-vm.sh (docs/RELIABILITY.md, "Memory limits"):
    /// `base` for any agent (a 1,000,000-reading backlog drained at 16 MiB),
    /// plus `perHTTPInput` for each HTTP input (a gateway under 100 clients
    /// was killed at 24 MiB and held at 32 MiB: its worker threads and
    /// their request buffers).
    package static let base: Int64 = 16 << 20
    package static let perHTTPInput: Int64 = 16 << 20

    /// The page cache a gateway gives its received ids under this limit
    /// (``QueueSettings/receivedIDsCacheBytes``): an eighth of the limit,
    /// between 2 and 16 MiB. At 16 MiB it is the largest part of a
    /// gateway's own memory, which a limit cannot reclaim: a gateway at
    /// 32 MiB under 100 clients was OOM-killed with it (docs/RELIABILITY.md,
    /// "Memory limits"); a smaller cache costs CPU on random ids only.
    package var receivedIDsCacheBytes: Int {
        Int(min(16 << 20, max(2 << 20, bytes / 8)))
    }

    /// The least limit the agent needs under `configuration`.
    package static func floor(for configuration: AgentConfiguration) -> Int64 {
        base + Int64(configuration.inputs.filter { $0.kind == .http }.count) * perHTTPInput
    }

    /// Why the agent refuses to run under this limit, or nil if it is enough.
    package func refusal(for configuration: AgentConfiguration) -> String? {
        let needed = Self.floor(for: configuration)
        guard bytes < needed else { return nil }
        let http = configuration.inputs.filter { $0.kind == .http }.count
        let parts =
            http == 0
            ? ""
            : " (\(Self.mebibytes(Self.base)) for the agent and \(Self.mebibytes(Self.perHTTPInput)) for \(http == 1 ? "its HTTP input" : "each of its \(http) HTTP inputs"))"
        return
            "The memory limit of this agent's control group (\(cgroup): memory.max, systemd's MemoryMax=) is \(Self.mebibytes(bytes)), below the \(Self.mebibytes(needed)) it needs with this configuration\(parts): under it the kernel would kill the agent when it gets busy, and systemd would start it again, over and over. Raise the limit (systemctl edit ingestd: [Service] MemoryMax=\(needed >> 20)M or more), or remove it. Not started."
    }

    package static func mebibytes(_ bytes: Int64) -> String {
        let tenths = bytes * 10 / (1 << 20)
        return tenths % 10 == 0 ? "\(tenths / 10) MiB" : "\(tenths / 10).\(tenths % 10) MiB"
    }

    /// The limit on this process, or nil when there is none (no cgroup v2,
    /// `max` all the way up, or the files cannot be read).
    package static func ofThisProcess(
        processCgroups: String = "/proc/self/cgroup",
        hierarchy: String = "/sys/fs/cgroup"
    ) -> MemoryLimit? {
        guard let text = try? readSmallFile(processCgroups, limit: FileLimits.small) else { return nil }
        // cgroup v2: the one line "0::/path".
        guard
            let line = String(decoding: text, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("0::") }
            )
        else { return nil }
        var path = String(line.dropFirst(3))
        var smallest: MemoryLimit?
        while true {
            let directory = path == "/" ? hierarchy : hierarchy + path
            if let value = try? readSmallFile(directory + "/memory.max", limit: 64),
                let bytes = Int64(String(decoding: value, as: UTF8.self).filter { !$0.isWhitespace }),
                bytes < smallest?.bytes ?? .max
            {
                smallest = MemoryLimit(bytes: bytes, cgroup: path)
            }
            guard path != "/", let slash = path.lastIndex(of: "/") else { break }
            path = slash == path.startIndex ? "/" : String(path[..<slash])
        }
        return smallest
    }
}
