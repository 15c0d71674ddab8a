import EdgeIngestCore

/// Names that tell this agent apart from every other: another box, or
/// another agent on the same box (another state directory).
enum AgentIdentity {
    /// `prefix-XXXXXXXXXXXX`: 12 hex digits of a hash of the box's
    /// `/etc/machine-id` (unique per installation, systemd's) and the state
    /// directory. The same for the same agent across restarts and
    /// upgrades, so a broker keeps one session per agent.
    ///
    /// ```swift
    /// AgentIdentity.clientID(prefix: "ingestd-raspberrypi", stateDirectory: "/var/lib/ingestd")
    /// // "ingestd-raspberrypi-3fa4c0d19b2e"
    /// ```
    static func clientID(prefix: String, stateDirectory: String, machineIDPath: String = "/etc/machine-id") -> String {
        let machineID = (try? readSmallTextFile(machineIDPath, limit: 256)) ?? ""
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits
        for byte in machineID.utf8 + [0] + stateDirectory.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return prefix + "-" + String((String(repeating: "0", count: 16 - hex.count) + hex).prefix(12))
    }
}
