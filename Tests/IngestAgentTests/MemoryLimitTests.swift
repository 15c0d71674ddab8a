import EdgeIngestCore
import Foundation
import TestSupport
import Testing

@testable import IngestAgent

/// Reading the agent's cgroup v2 memory limit from files laid out as the
/// kernel does (/proc/self/cgroup, /sys/fs/cgroup/…/memory.max). Under
/// systemd as PID 1, scripts/test-memory-vm.sh shows the refusal end to end.
@Suite struct MemoryLimitTests {
    /// The limit read from a /proc/self/cgroup of `cgroupLine` and a
    /// hierarchy with `limits` (cgroup path → memory.max), laid out in a
    /// fresh directory.
    func limit(_ cgroupLine: String, _ limits: [String: String]) throws -> MemoryLimit? {
        let directory = try TemporaryDirectory()
        let proc = directory.file("cgroup")
        try (cgroupLine + "\n").write(toFile: proc, atomically: false, encoding: .utf8)
        let hierarchy = directory.file("sys-fs-cgroup")
        for (path, value) in limits {
            let dir = hierarchy + (path == "/" ? "" : path)
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try (value + "\n").write(toFile: dir + "/memory.max", atomically: false, encoding: .utf8)
        }
        return MemoryLimit.ofThisProcess(processCgroups: proc, hierarchy: hierarchy)
    }

    @Test func theSmallestLimitOnThePathIsTheOneThatHolds() throws {
        #expect(
            try limit(
                "0::/system.slice/ingestd.service",
                ["/system.slice/ingestd.service": "max", "/system.slice": "50331648"]
            )
                == MemoryLimit(bytes: 48 << 20, cgroup: "/system.slice")
        )
        #expect(
            try limit(
                "0::/system.slice/ingestd.service",
                ["/system.slice/ingestd.service": "12582912", "/system.slice": "50331648"]
            )
                == MemoryLimit(bytes: 12 << 20, cgroup: "/system.slice/ingestd.service")
        )
    }

    /// A gateway's received-id cache is an eighth of the limit, between 2 and 16 MiB.
    @Test func theReceivedIDCacheIsAnEighthOfTheLimitWithinItsBounds() {
        func cache(_ limit: Int64) -> Int { MemoryLimit(bytes: limit, cgroup: "/").receivedIDsCacheBytes }
        #expect(cache(12 << 20) == 2 << 20)
        #expect(cache(32 << 20) == 4 << 20)
        #expect(cache(64 << 20) == 8 << 20)
        #expect(cache(128 << 20) == 16 << 20)
        #expect(cache(1 << 30) == 16 << 20)
        #expect(QueueSettings().receivedIDsCacheBytes == 16 << 20)
    }

    @Test func noLimitWhenEveryLevelSaysMaxOrThereIsNoCgroupV2() throws {
        #expect(
            try limit(
                "0::/user.slice/session-1.scope",
                ["/user.slice/session-1.scope": "max"]
            ) == nil
        )
        // cgroup v1 only (no "0::" line): nothing to read.
        #expect(try limit("4:memory:/system.slice/ingestd.service", [:]) == nil)
        #expect(MemoryLimit.ofThisProcess(processCgroups: "/nonexistent/cgroup") == nil)
    }

    @Test func aLimitBelowTheFloorIsRefusedWithWhatToSetAndAnEnoughOneIsNot() throws {
        /// A configuration of one Reading type and this input.
        func configuration(input: String) throws -> AgentConfiguration {
            try AgentConfiguration.parse(
                "[types.Reading]\nvalue = \"double\"\n[[inputs]]\n" + input,
                path: "agent.toml",
                environment: ["HOME": "/home/op"]
            )
        }
        let agent = try configuration(input: "kind = \"stdin\"\ntype = \"Reading\"")
        let gateway = try configuration(input: "kind = \"http\"\nlisten = \"127.0.0.1:8480\"")
        #expect(MemoryLimit.floor(for: agent) == MemoryLimit.base)
        #expect(MemoryLimit.floor(for: gateway) == MemoryLimit.base + MemoryLimit.perHTTPInput)

        let small = MemoryLimit(bytes: MemoryLimit.base - (1 << 20), cgroup: "/system.slice/ingestd.service")
        let refusal = try #require(small.refusal(for: agent))
        #expect(refusal.contains("/system.slice/ingestd.service"))
        #expect(refusal.contains("MemoryMax=\(MemoryLimit.base >> 20)M"))
        #expect(refusal.contains("Not started."))

        let enoughForAnAgent = MemoryLimit(bytes: MemoryLimit.base, cgroup: "/x")
        #expect(enoughForAnAgent.refusal(for: agent) == nil)
        let gatewayRefusal = try #require(enoughForAnAgent.refusal(for: gateway))
        #expect(gatewayRefusal.contains("16 MiB for the agent and 16 MiB for its HTTP input)"))
        #expect(MemoryLimit(bytes: MemoryLimit.floor(for: gateway), cgroup: "/x").refusal(for: gateway) == nil)
        #expect(MemoryLimit.mebibytes(12_582_912 + (1 << 19)) == "12.5 MiB")
    }
}
