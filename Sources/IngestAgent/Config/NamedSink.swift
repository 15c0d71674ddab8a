import EdgeIngestCore

/// One destination of several (`[sinks.NAME]`), or the one `[upload]`
/// (named `upload`): its batching and sink keys, and its route — which
/// record types go to it, and how far it may fall behind the others
/// (docs/SINKS.md "Several sinks").
///
/// ```toml
/// [upload]                          # the cloud backend: every type
/// url = "https://backend.example/ingest/v1/batches"
///
/// [sinks.site]                      # a local archive: alarms only
/// sink = "sqlite"
/// path = "site-archive.sqlite"
/// types = ["Alarm"]
/// max_lag_bytes = 67108864          # 64 MiB waiting for it alone, then its oldest are dropped for it
/// ```
package struct NamedSink: Sendable {
    /// `upload` for `[upload]`, else the name after `sinks.`.
    package let name: String
    package var upload: UploadSettings
    package var sink: SinkSettings
    package var route: SinkRoute

    /// The section it comes from, for messages: `upload` or `sinks.NAME`.
    package var section: String { name == QueueRouting.defaultSinkName ? "upload" : "sinks.\(name)" }
}

/// Which record types go to a sink, and its lag bound.
package struct SinkRoute: Sendable, Hashable {
    /// nil: every type.
    package var types: Set<String>?
    /// `max_lag_bytes`: nil takes the default (half of `queue.max_bytes`
    /// when several sinks share a bounded queue); 0: no bound.
    package var maxLagBytes: Int64?
    /// `max_lag_s`: nil, no bound by age.
    package var maxLagSeconds: Int64?

    package init() {}
}

extension AgentConfiguration {
    /// Every sink the agent delivers to: `[upload]` (if present) first, then
    /// each `[sinks.NAME]` in the file's order.
    package var deliveringSinks: [NamedSink] {
        let primary = upload.map {
            NamedSink(name: QueueRouting.defaultSinkName, upload: $0, sink: sink, route: uploadRoute)
        }
        return (primary.map { [$0] } ?? []) + namedSinks
    }

    /// The queue's routing for these sinks: ``QueueRouting/single`` for one
    /// `[upload]` taking every type (the previous releases' behaviour, and
    /// their file, unchanged). With several sinks and a byte-bounded
    /// queue, a sink's lag defaults to half of `queue.max_bytes`, so one
    /// sink that is down for days can never fill the queue for the others.
    package var queueRouting: QueueRouting {
        let sinks = deliveringSinks
        guard !sinks.isEmpty else { return .single }
        let defaultLag = sinks.count > 1 ? queue.maxBytes.map { $0 / 2 } : nil
        return QueueRouting(
            sinks: sinks.map { sink in
                let lag = sink.route.maxLagBytes ?? defaultLag
                return QueueRouting.Sink(
                    name: sink.name,
                    types: sink.route.types,
                    maxLagBytes: lag == 0 ? nil : lag,
                    maxLagMilliseconds: sink.route.maxLagSeconds.map { $0 * 1000 }
                )
            }
        )
    }
}
