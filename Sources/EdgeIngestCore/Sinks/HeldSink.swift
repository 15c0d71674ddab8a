/// A sink that stores nothing and holds every batch with one reason: what
/// the agent puts in front of the configured sink while the configuration
/// has a problem an earlier release accepted and that would lose data
/// once uploaded (`check-config` names it). The readings stay queued; the
/// uploader waits its hold time and asks again, so fixing the file and
/// reloading releases them.
package final class HeldSink: BatchSink {
    let reason: String

    package init(reason: String) { self.reason = reason }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome { .hold(reason: reason) }

    package var description: String { "held (\(reason.prefix(80)))" }
}
