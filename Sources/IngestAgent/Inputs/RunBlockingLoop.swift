import EdgeIngestCore
import ServiceLifecycle

/// Runs a blocking loop on its own thread; graceful shutdown fires the
/// loop's stop signal, and so does cancellation (a service group cancels
/// its services when one of them ends out of order during a shutdown: a
/// thread deaf to that would keep the process alive for ever). The loop's
/// error is rethrown here.
func runBlockingLoop(_ loop: @escaping @Sendable (StopSignal) throws -> Void) async throws {
    let stop = StopSignal()
    let failure = FailureBox()
    await withTaskCancellationHandler {
        await withGracefulShutdownHandler {
            await BlockingThread.run {
                do {
                    try loop(stop)
                } catch {
                    failure.set(error)
                }
            }
        } onGracefulShutdown: {
            stop.stop()
        }
    } onCancel: {
        stop.stop()
    }
    if let error = failure.error { throw error }
}
