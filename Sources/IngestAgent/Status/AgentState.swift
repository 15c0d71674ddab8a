import EdgeIngestCore

/// The agent's state as status.json, `ingestd status` and `ingestd_state`
/// show it: the uploader's phase (``UploadPhase``), or `stopped`, or — said
/// by `ingestd status` of an agent that does not answer — `not_responding`.
/// A typed name rather than a free string; a status file written by another
/// version may hold a state this one does not know, which is kept as read.
///
/// ```swift
/// if status.state == .stopped { … }
/// status.state = AgentState(UploadPhase.backingOff)   // "backing_off"
/// ```
package struct AgentState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    package var rawValue: String

    package init(rawValue: String) { self.rawValue = rawValue }

    /// The state of a running agent whose uploader is in `phase`.
    package init(_ phase: UploadPhase) { rawValue = phase.name }

    package static let idle = AgentState(.idle)
    package static let uploading = AgentState(.uploading)
    package static let backingOff = AgentState(.backingOff)
    package static let error = AgentState(.error)
    package static let waitingForUser = AgentState(.waitingForUser)
    package static let clientReset = AgentState(.clientReset)
    package static let stopped = AgentState(rawValue: "stopped")
    package static let notResponding = AgentState(rawValue: "not_responding")

    /// The states `ingestd_state` always lists (an unknown one is added).
    package static let listed: [AgentState] = [
        .idle, .uploading, .backingOff, .error, .waitingForUser, .clientReset, .stopped,
    ]

    package var description: String { rawValue }
}
