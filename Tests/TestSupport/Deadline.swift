/// Runs `body`, failing with ``DeadlinePassed`` if it has not finished
/// after `seconds` (the body is cancelled): for calls that wait without a
/// limit of their own (`syncSession.wait(for: .upload)`), so a test that
/// would hang fails instead.
///
///     try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
public func withDeadline<T: Sendable>(
    seconds: Int,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlinePassed(seconds: seconds) }
        return value
    }
}

/// A ``withDeadline(seconds:_:)`` body did not finish in time.
public struct DeadlinePassed: Error, CustomStringConvertible {
    public var seconds: Int
    public var description: String { "not finished after \(seconds) s" }
}
