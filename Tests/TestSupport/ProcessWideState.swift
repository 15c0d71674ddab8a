/// Tests in different suites run at the same time in one process: those
/// that set process-wide state (`SyncManager.errorHandler`) take turns
/// through this.
///
///     try await withProcessWideState { SyncManager.errorHandler = …; … }
public func withProcessWideState<T>(_ body: () async throws -> T) async rethrows -> T {
    await ProcessWideLock.shared.lock()
    do {
        let result = try await body()
        await ProcessWideLock.shared.unlock()
        return result
    } catch {
        await ProcessWideLock.shared.unlock()
        throw error
    }
}

actor ProcessWideLock {
    static let shared = ProcessWideLock()
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        guard locked else {
            locked = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func unlock() {
        if waiters.isEmpty { locked = false } else { waiters.removeFirst().resume() }
    }
}
