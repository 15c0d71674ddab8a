import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The uploader of one queue, on its own thread while any realm on that
/// queue is open: started by the first, stopped (after a bounded final
/// drain) when the last is released.
final class BackgroundUpload: Sendable {
    let uploader: Uploader
    /// The client-reset handler of the file, shared by every realm on it.
    let resetHandler: ClientResetHandler
    /// What the upload did, for waits, progress observers and refusals.
    let activity: UploadActivity
    let stop = StopSignal()
    let wake = WakeSignal()
    private let thread: PlainMutex<pthread_t?> = PlainMutex(nil)
    private let resumer: UInt64
    private let app: App

    init(uploader: Uploader, user: User, resetHandler: ClientResetHandler, activity: UploadActivity) {
        self.uploader = uploader
        self.activity = activity
        self.app = user.app
        self.resetHandler = resetHandler
        resumer = user.app.addResumer(userID: user.id) { [uploader] in uploader.resume() }
        resetHandler.attach(self)  // before the first batch: a reset then finds the live realm
        let handle = BlockingThread.start { [uploader, stop, wake, activity] in
            do {
                try uploader.run(stop: stop, wake: wake)
            } catch {
                activity.end(error)
                uploader.logger.error("The background upload stopped", metadata: ["error": "\(error)"])
            }
        }
        thread.withLock { $0 = handle }
    }

    deinit {
        app.removeResumer(resumer)
        stop.stop()
        if let handle = thread.withLock({ $0 }) { pthread_join(handle, nil) }
    }

    /// One background upload per queue in the process.
    static let registry = PlainMutex<[ObjectIdentifier: WeakUpload]>([:])

    // Unchecked: `upload` is read and written only under `registry`'s lock.
    final class WeakUpload: @unchecked Sendable {
        weak var upload: BackgroundUpload?
        init(_ upload: BackgroundUpload) { self.upload = upload }
    }

    /// The running upload of `queue`, or a new one made by `make`.
    static func shared(for queue: DurableQueue, make: () throws -> BackgroundUpload) throws -> BackgroundUpload {
        try registry.withLock { entries in
            if let existing = entries[ObjectIdentifier(queue)]?.upload { return existing }
            let upload = try make()
            entries[ObjectIdentifier(queue)] = WeakUpload(upload)
            return upload
        }
    }
}
