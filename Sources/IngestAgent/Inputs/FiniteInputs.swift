import EdgeIngestCore
import Logging
import ServiceLifecycle

/// Ends the agent when its last finite input (stdin) has ended, without
/// racing a shutdown signal.
///
/// A service that simply returns at end of input, with
/// `successTerminationBehavior: .gracefullyShutdownGroup`, races a SIGTERM or
/// Ctrl-C that arrives at the same moment (as it does when systemd or the
/// shell stops `sensor | ingestd` together: the sensor's death is ingestd's
/// end of input). The group, already shutting services down in order, sees
/// the input finish out of order, cancels everything and fails. So an
/// ended input does not return: it asks the group for a graceful shutdown
/// once every finite input has ended, then waits for its own turn to stop,
/// like any long-running service.
final class FiniteInputs: Sendable {
    private struct State {
        var running: Int
        var group: ServiceGroup?
        var allEnded = false
    }
    private let state: PlainMutex<State>

    init() {
        state = PlainMutex(State(running: 0, group: nil))
    }

    /// The group to shut down; set once, before it runs.
    func attach(_ group: ServiceGroup) {
        state.withLock { $0.group = group }
    }

    /// Wraps an input service: when it ends, counts it, shuts the group down
    /// gracefully after the last one, and returns only once its own graceful
    /// shutdown has come (or the task is cancelled).
    func wrap(_ input: any Service) -> any Service {
        state.withLock { $0.running += 1 }
        return Wrapped(input: input, inputs: self)
    }

    /// Whether every input ended by itself (end of input), rather than the
    /// agent being told to stop.
    var allEnded: Bool { state.withLock { $0.allEnded } }

    fileprivate func inputEnded() async {
        let group: ServiceGroup? = state.withLock { state in
            state.running -= 1
            if state.running == 0, !Task.isShuttingDownGracefully { state.allEnded = true }
            return state.running == 0 ? state.group : nil
        }
        if let group, !Task.isShuttingDownGracefully {
            await group.triggerGracefulShutdown()
        }
    }

    private struct Wrapped: Service, CustomStringConvertible {
        let input: any Service
        let inputs: FiniteInputs
        var description: String { "\(input)" }

        func run() async throws {
            try await input.run()
            await inputs.inputEnded()
            try? await gracefulShutdown()
        }
    }
}
