import Foundation
import TestSupport
import Testing

/// The built agent under a cgroup memory limit as it reads one: its
/// cgroup's `memory.max`. The limit here is a file in a private mount
/// namespace (a tmpfs over /sys/fs/cgroup), not enforced: what is tested is
/// what the agent makes of the number. scripts/test-memory-vm.sh runs the
/// packaged unit under a real `MemoryMax=`.
@Suite struct MemoryLimitAgentTests {
    /// The control group path /proc/self/cgroup names (cgroup v2 line), or
    /// nil when this machine has none.
    static let ownCgroup: String? = {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }()

    static let canFakeALimit =
        getuid() == 0 && ownCgroup != nil && FileManager.default.fileExists(atPath: "/usr/bin/unshare")

    /// Starts ingestd where its cgroup's memory.max reads `bytes`.
    static func launcher(limit bytes: Int64) -> [String] {
        let directory = "/sys/fs/cgroup" + (ownCgroup == "/" ? "" : ownCgroup ?? "")
        return [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            "mount -t tmpfs tmpfs /sys/fs/cgroup && mkdir -p '\(directory)' && echo \(bytes) > '\(directory)/memory.max' && exec \"$@\"",
            "sh",
        ]
    }

    /// A gateway (an HTTP input) whose uploads go nowhere: what is tested is its start.
    static func gateway() throws -> AgentFixture {
        try AgentFixture(
            "\n[upload]\nurl = \"http://127.0.0.1:9/ingest/v1/batches\"\n",
            inputs: """
                [[inputs]]
                kind = "http"
                listen = "127.0.0.1:0"
                anonymous = true
                """
        )
    }

    /// Runs `fixture`'s agent where its cgroup's memory.max reads `bytes`.
    static func start(_ fixture: AgentFixture, limit bytes: Int64) throws -> RunningAgent {
        try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment,
            stdinFile: "/dev/null",
            launcher: launcher(limit: bytes)
        )
    }

    /// Under 32 MiB a gateway keeps its received ids in a 4 MiB page cache
    /// (an eighth of the limit) and says so once at start; it serves.
    @Test(.enabled(if: canFakeALimit, "needs root, cgroup v2 in /proc/self/cgroup and unshare"))
    func aGatewayUnderASmallLimitShrinksItsReceivedIDCacheAndSaysSo() throws {
        let fixture = try Self.gateway()
        let agent = try Self.start(fixture, limit: 32 << 20)
        #expect(fixture.listenAddress() != nil, "\(agent.stderr.suffix(2000))")
        #expect(
            agent.stderr.contains(
                "Under the memory limit of 32 MiB the received-id cache is 4 MiB (16 MiB without a limit)"
            ),
            "\(agent.stderr.suffix(2000))"
        )
        #expect(agent.stderr.contains("queue.received_id_cache_bytes=4194304"), "\(agent.stderr.suffix(2000))")
        #expect(agent.terminate() == 0)
    }

    /// With room to spare (1 GiB) nothing is said and the default holds;
    /// below the floor (24 MiB for a gateway) the agent refuses to start
    /// with exit 78 and the limit it needs.
    @Test(.enabled(if: canFakeALimit, "needs root, cgroup v2 in /proc/self/cgroup and unshare"))
    func aLargeLimitChangesNothingAndOneBelowTheFloorIsRefused() throws {
        let fixture = try Self.gateway()
        let roomy = try Self.start(fixture, limit: 1 << 30)
        #expect(fixture.listenAddress() != nil, "\(roomy.stderr.suffix(2000))")
        #expect(roomy.terminate() == 0)
        #expect(!roomy.stderr.contains("received-id cache"), "\(roomy.stderr.suffix(2000))")

        let tight = try Self.start(fixture, limit: 24 << 20)
        tight.process.waitUntilExit()
        #expect(tight.process.terminationStatus == 78, "\(tight.stderr.suffix(2000))")
        #expect(tight.stderr.contains("is 24 MiB, below the 32 MiB it needs"), "\(tight.stderr.suffix(2000))")
    }
}
