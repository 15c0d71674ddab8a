import EdgeIngestCore
import Logging
import ServiceLifecycle

/// The agent's uploader as a service: runs the library's ``Uploader`` on
/// its own thread until graceful shutdown, then lets it drain for the
/// configured shutdown timeout.
struct UploadService: Service {
    let uploader: Uploader
    let wake: WakeSignal

    func run() async throws {
        try await runBlockingLoop { [uploader, wake] stop in try uploader.run(stop: stop, wake: wake) }
    }
}
