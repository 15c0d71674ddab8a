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
public struct AgentState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// The state of a running agent whose uploader is in `phase`.
    public init(_ phase: UploadPhase) { rawValue = phase.name }

    public static let idle = AgentState(.idle)
    public static let uploading = AgentState(.uploading)
    public static let backingOff = AgentState(.backingOff)
    public static let error = AgentState(.error)
    public static let waitingForUser = AgentState(.waitingForUser)
    public static let clientReset = AgentState(.clientReset)
    public static let stopped = AgentState(rawValue: "stopped")
    public static let notResponding = AgentState(rawValue: "not_responding")

    /// The states `ingestd_state` always lists (an unknown one is added).
    public static let listed: [AgentState] = [
        .idle, .uploading, .backingOff, .error, .waitingForUser, .clientReset, .stopped,
    ]

    public var description: String { rawValue }
}
