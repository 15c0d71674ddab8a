import EdgeIngestCore
import Logging
import ServiceLifecycle

/// Answers reload requests (SIGHUP) while the agent runs: reads the
/// configuration anew; with problems, logs them and keeps running on the
/// configuration it has; without, tells systemd (RELOADING=1) and shuts the
/// services down gracefully — inputs commit what they read, the uploader
/// returns its lease — so the agent runs again with the new configuration
/// (``Agent/run(reload:)``). Nothing accepted is lost or re-sent beyond
/// what a restart re-sends.
struct ReloadService: Service {
    let reload: Reload
    let notifier: SystemdNotifier
    let logger: Logger
    /// Starts the graceful shutdown of the agent's services.
    let shutDown: @Sendable () async -> Void

    func run() async {
        for await _ in reload.requests.cancelOnGracefulShutdown() {
            logger.notice("Reloading the configuration (SIGHUP)")
            do {
                let configuration = try reload.load()
                reload.accept(configuration)
                notifier.reloading()
                await shutDown()
                // Return only in turn: a service that ends before the group
                // asks it to counts as a failure.
                try? await gracefulShutdown()
                return
            } catch {
                reload.refuse(because: error)
                logger.error(
                    "Reload refused: the configuration has problems; ingestd goes on with the one it runs",
                    metadata: ["error": "\(error)"]
                )
            }
        }
    }
}
