import EdgeIngestCore
import UnixSignals

/// A reload asked for with SIGHUP (`systemctl reload ingestd`), as one run
/// of the agent sees it: the requests, how to read the configuration anew,
/// and — once one was read without problems — the configuration the next
/// run starts with.
///
/// The requests are a stream that keeps at most one waiting request, so a
/// burst of signals coalesces, and a signal that comes while the agent is
/// restarting is answered by one more reload afterwards, never lost.
///
/// ```swift
/// let (requests, request) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
/// // SIGHUP → request.yield()
/// let reload = Reload(requests: requests) { try loadConfiguration() }
/// if case .reload(let next) = try await Agent(configuration: configuration, logger: logger).run(reload: reload) { … }
/// ```
package final class Reload: Sendable {
    let requests: AsyncStream<Void>
    let load: @Sendable () throws -> AgentConfiguration
    private let accepted = PlainMutex<AgentConfiguration?>(nil)

    /// `ingestd send` connections kept open from one run to the next
    /// (give every run of one process the same one).
    package let handover: SocketHandover

    package init(
        requests: AsyncStream<Void>,
        handover: SocketHandover = SocketHandover(),
        load: @escaping @Sendable () throws -> AgentConfiguration
    ) {
        self.requests = requests
        self.handover = handover
        self.load = load
    }

    private let refused = PlainMutex<String?>(nil)

    /// The configuration a reload read and accepted; nil while none did.
    var acceptedConfiguration: AgentConfiguration? { accepted.withLock { $0 } }

    /// When and why the last reload was refused (`at <ISO time>: <problems>`),
    /// while the agent runs on its previous configuration: `ingestd status`
    /// shows it as a problem until a reload succeeds or the process restarts.
    package var refusal: String? { refused.withLock { $0 } }

    func accept(_ configuration: AgentConfiguration) {
        refused.withLock { $0 = nil }
        accepted.withLock { $0 = configuration }
    }

    func refuse(because error: any Error) {
        // One line: "… has 2 problems: FILE:line 3: …; FILE:line 9: …".
        let lines = "\(error)".split(separator: "\n").map { $0.trimmingPrefix(" ") }
        let problems = lines.count > 1 ? lines[0] + " " + lines.dropFirst().joined(separator: "; ") : lines.joined()
        refused.withLock { $0 = "at \(isoNow()): \(problems)" }
    }
}

/// How a run of the agent ended.
package enum AgentExit: Sendable {
    /// Its inputs ended or it was told to stop.
    case stopped
    /// Its inputs ended by themselves (pipe mode), but the final upload
    /// could not deliver everything: `records` stay queued for the next start.
    case endedWithReadingsQueued(records: Int64, reason: String)
    /// A reload read a new configuration: run again with it.
    case reload(AgentConfiguration)
}

extension Reload {
    /// Reload requests from SIGHUP, for the life of the process: the stream
    /// (at most one request waiting, so a burst coalesces), and `forward`,
    /// which moves each signal into it until its task is cancelled. Call it
    /// before the agent starts: the signal is trapped from then on (before,
    /// a SIGHUP would end the process).
    package static func hangupRequests() async -> (requests: AsyncStream<Void>, forward: @Sendable () async -> Void) {
        let (requests, request) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        return (requests, { for await _ in hangups { request.yield() } })
    }
}
