import Dispatch
import EdgeIngest
import Foundation

/// The states of ``Realm/asyncOpen(configuration:downloadBeforeOpen:timeout:)``:
/// Realm's `AsyncOpenState`, with ``Realm`` in `.open`.
public enum AsyncOpenState: Sendable {
    /// Reaching the backend.
    case connecting
    /// No usable session: log the user in again; the open then goes on.
    case waitingForUser
    /// The records queued at open being uploaded first: the fraction the
    /// backend confirmed, from 0 to 1.
    case progress(Double)
    /// Open and ready for writes.
    case open(Realm)
    /// Opening failed; the error says why.
    case error(Error)
}

extension Realm {
    /// Opens a realm step by step, reporting each state (what Realm's
    /// `@AsyncOpen` publishes, for code without SwiftUI). The states and
    /// their order are those of ``IngestRealm/asyncOpen(configuration:openBehavior:timeout:logger:)``:
    /// with `.always` (or the first `.once`): `.waitingForUser` while the
    /// user has no session, `.connecting`, then `.progress` from 0 to 1
    /// while the records queued at open are uploaded (none when nothing
    /// was queued), then `.open` or `.error`. With `.never`: `.open` or `.error`.
    ///
    /// ```swift
    /// for await state in Realm.asyncOpen(configuration: config, downloadBeforeOpen: .always) {
    ///     switch state {
    ///     case .connecting, .waitingForUser: print("waiting…")
    ///     case .progress(let fraction): print("uploading what was queued: \(Int(fraction * 100)) %")
    ///     case .open(let realm): use(realm)
    ///     case .error(let error): print(error.localizedDescription)
    ///     }
    /// }
    /// ```
    public static func asyncOpen(
        configuration: Configuration = .defaultConfiguration,
        downloadBeforeOpen: OpenBehavior = .always,
        timeout: Duration = .seconds(30)
    ) -> AsyncStream<AsyncOpenState> {
        let opening: IngestConfiguration
        do {
            opening = try configuration.opening()
        } catch {
            return AsyncStream { continuation in
                continuation.yield(
                    .error(error as? Realm.Error ?? Realm.Error(EdgeIngestError(.invalidConfiguration, "\(error)")))
                )
                continuation.finish()
            }
        }
        let states = IngestRealm.asyncOpen(
            configuration: opening,
            openBehavior: downloadBeforeOpen,
            timeout: timeout,
            logger: Realm.logger
        )
        return AsyncStream { continuation in
            let task = Task {
                for await state in states {
                    switch state {
                    case .connecting: continuation.yield(.connecting)
                    case .waitingForUser: continuation.yield(.waitingForUser)
                    case .progress(let fraction): continuation.yield(.progress(fraction))
                    case .open(let realm): continuation.yield(.open(Realm(realm, configuration: configuration)))
                    case .error(let error): continuation.yield(.error(Realm.Error(error)))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Realm's callback form: opens as ``asyncOpen(configuration:downloadBeforeOpen:timeout:)``
    /// (downloading before open, as Realm's does) and calls `callback` once
    /// on `callbackQueue` with the realm or the error.
    @discardableResult
    public static func asyncOpen(
        configuration: Configuration = .defaultConfiguration,
        callbackQueue: DispatchQueue = .main,
        callback: @escaping @Sendable (Result<Realm, Swift.Error>) -> Void
    ) -> AsyncOpenTask {
        let task = Task {
            var outcome: Result<Realm, Swift.Error>?
            for await state in asyncOpen(configuration: configuration) {
                if case .open(let realm) = state { outcome = .success(realm) }
                if case .error(let error) = state { outcome = .failure(error) }
            }
            let result = outcome ?? .failure(CancellationError())
            callbackQueue.async { callback(result) }
        }
        return AsyncOpenTask(task)
    }
}

/// The handle of a callback ``Realm/asyncOpen(configuration:callbackQueue:callback:)``.
public struct AsyncOpenTask: Sendable {
    private let task: Task<Void, Never>
    init(_ task: Task<Void, Never>) { self.task = task }
    /// Stops opening; the callback gets a `CancellationError`.
    public func cancel() { task.cancel() }
}
