#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (a `read` on a pipe or tty) on its own OS thread, so
/// it never occupies one of the few threads of Swift's cooperative pool.
package enum BlockingThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new joinable thread; nil if no thread could be made.
    package static func start(_ body: @escaping () -> Void) -> pthread_t? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(
            &thread,
            nil,
            { raw in
                Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
                return nil
            },
            context
        )
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    /// Starts `body` on a new detached thread; false if no thread could be made.
    package static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard let thread = start(body) else { return false }
        pthread_detach(thread)
        return true
    }

    /// Runs `body` on a new thread and returns when it has finished.
    package static func run(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let started = detach {
                body()
                continuation.resume()
            }
            if !started {
                // No thread: run inline rather than lose the input.
                body()
                continuation.resume()
            }
        }
    }
}

extension BlockingThread {
    /// Runs blocking `body` (a libcurl request, an fsync) on its own thread
    /// and returns its result, keeping the cooperative pool free.
    package static func value<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result = ResultBox<T>()
        await run { result.set(Result { try body() }) }
        return try result.get()
    }
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // Written once by the worker thread before the continuation resumes,
    // read after: the continuation orders the two.
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value }
    func get() throws -> T { try result!.get() }
}
