import Logging

/// The ingest protocol over HTTP (docs/PROTOCOL.md): an EdgeIngest backend,
/// or another `ingestd` relaying upstream. One reused libcurl handle.
/// With ``HTTPSettings/failoverURLs``, several equivalent upstreams, used
/// in turn (``UpstreamFailover``).
package final class IngestProtocolSink: BatchSink {
    let transport: CurlTransport
    /// Only the upload thread delivers; the lock keeps that honest.
    private let failover: PlainMutex<UpstreamFailover>

    package init(settings: HTTPSettings, userAgent: String) throws {
        transport = try CurlTransport(settings: settings, userAgent: userAgent)
        failover = PlainMutex(
            UpstreamFailover(
                urls: [settings.url] + settings.failoverURLs,
                failuresBeforeSwitch: settings.failoverAfterFailures,
                failbackMilliseconds: settings.failbackMilliseconds
            )
        )
    }

    package var description: String {
        let upstreams = ([transport.settings.url] + transport.settings.failoverURLs).map(redactedURL)
        return upstreams.joined(separator: ", then ") + " (gzip \(transport.settings.gzip))"
    }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        guard !transport.settings.failoverURLs.isEmpty else {
            return transport.deliver(batch, headers: batch.headers, classify: ResponseClassifier.classify)
        }
        let (before, url) = failover.withLock { ($0.current, $0.url(now: monotonicMilliseconds())) }
        let outcome = transport.deliver(batch, headers: batch.headers, url: url, classify: ResponseClassifier.classify)
        let (after, recorded, urls) = failover.withLock { failover in
            let recorded = failover.record(outcome, now: monotonicMilliseconds())
            return (failover.current, recorded, failover.urls)
        }
        if after != before {
            // A switch, or the first upstream answering again after one.
            logger.withLock { $0 }?
                .notice(
                    after == 0
                        ? "Uploads go to the first upstream again" : "Upload failover: the next upstream takes over",
                    metadata: [
                        "ingest.upstream": "\(redactedURL(urls[after]))", "ingest.upstream_index": "\(after + 1)",
                        "ingest.previous_upstream": "\(redactedURL(urls[before]))",
                    ]
                )
        }
        return recorded
    }

    private let logger = PlainMutex<Logger?>(nil)

    package func attach(logger: Logger) { self.logger.withLock { $0 = logger } }
}

extension CurlTransport {
    /// POSTs a batch and turns the answer into an outcome with `classify`
    /// (status, Retry-After, body, batch size); a network failure is a
    /// passing one: retry.
    package func deliver(
        _ batch: SinkBatch,
        headers: [(String, String)],
        url: String? = nil,
        classify: (Int, String?, [UInt8], Int) -> UploadOutcome
    ) -> UploadOutcome {
        do {
            let response = try post(batch.payload, headers: headers, url: url)
            return classify(response.status, response.headers["retry-after"], response.body, batch.recordCount)
        } catch let error as TransportError where error.needsConfiguration {
            // Retrying cannot mend a TLS set-up the backend refuses: hold,
            // and let status show it as a problem.
            return .hold(reason: error.message)
        } catch let error as TransportError {
            return .retry(reason: error.message, retryAfterSeconds: nil)
        } catch {
            return .retry(reason: "\(error)", retryAfterSeconds: nil)
        }
    }
}
