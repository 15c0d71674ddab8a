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
        if let v = agent?["log_target"], let name = string(v, "agent.log_target") {
            if let target = AgentConfiguration.LogTarget(rawValue: name) {
                c.logTarget = target
            } else {
                notOneOf(
                    v,
                    "agent.log_target",
                    name,
                    "must be auto, journal or stderr",
                    choices: ["auto", "journal", "stderr"]
                )
            }
        }
        if let v = agent?["log_level"], let name = string(v, "agent.log_level") {
            let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
            if levels.contains(name) {
                c.logLevel = name
            } else {
                notOneOf(
                    v,
                    "agent.log_level",
                    name,
                    "must be one of \(levels.joined(separator: ", "))",
                    choices: levels
                )
            }
        }
        if let v = agent?["stats_interval_seconds"], let n = integer(v, "agent.stats_interval_seconds", min: 0) {
            c.statsIntervalSeconds = Int(n)
        }
        if let v = agent?["status_interval_ms"], let n = integer(v, "agent.status_interval_ms", min: 10) {
            c.statusIntervalMilliseconds = Int(n)
        }
    }
}
