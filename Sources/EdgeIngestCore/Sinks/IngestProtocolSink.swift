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
        let url = failover.withLock { $0.url(now: monotonicMilliseconds()) }
        let outcome = transport.deliver(batch, headers: batch.headers, url: url, classify: ResponseClassifier.classify)
        return failover.withLock { $0.record(outcome, now: monotonicMilliseconds()) }
    }
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
