import EdgeIngestCore

/// `[agent]`: the state directory, the rejects file, logging, and how
/// often status and stats are written.
extension ConfigurationDecoder {
    static let agentKeys: Set<String> = [
        "state_directory", "rejects_file", "log_target", "log_level", "stats_interval_seconds", "status_interval_ms",
    ]

    /// Everything but `state_directory`, which the other sections' defaults
    /// depend on and ``decode(_:environment:)`` reads first (it also checks
    /// for unknown keys, before the other sections, as it always has).
    mutating func decodeAgent(_ agent: TOMLTable?, into c: inout AgentConfiguration) {
        c.rejectsFile = string(agent?["rejects_file"], "agent.rejects_file").flatMap { $0.isEmpty ? nil : $0 }
        if let target = choice(
            agent?["log_target"],
            "agent.log_target",
            "must be auto, journal or stderr",
            choices: ["auto", "journal", "stderr"],
            AgentConfiguration.LogTarget.init(rawValue:)
        ) {
            c.logTarget = target
        }
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        if let level = choice(
            agent?["log_level"],
            "agent.log_level",
            "must be one of \(levels.joined(separator: ", "))",
            choices: levels,
            { levels.contains($0) ? $0 : nil }
        ) {
            c.logLevel = level
        }
        if let v = agent?["stats_interval_seconds"], let n = integer(v, "agent.stats_interval_seconds", min: 0) {
            c.statsIntervalSeconds = Int(n)
        }
        if let v = agent?["status_interval_ms"], let n = integer(v, "agent.status_interval_ms", min: 10) {
            c.statusIntervalMilliseconds = Int(n)
        }
    }
}
