import EdgeIngestCore

/// Carries an error out of a thread.
final class FailureBox: Sendable {
    private let stored = PlainMutex<(any Error)?>(nil)
    func set(_ error: any Error) { stored.withLock { $0 = error } }
    var error: (any Error)? { stored.withLock { $0 } }
}
