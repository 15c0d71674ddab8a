/// The ingest protocol over HTTP (docs/PROTOCOL.md): an EdgeIngest backend,
/// or another `ingestd` relaying upstream. One reused libcurl handle.
package final class IngestProtocolSink: BatchSink {
    let transport: CurlTransport
    let url: String

    package init(settings: HTTPSettings, userAgent: String) throws {
        transport = try CurlTransport(settings: settings, userAgent: userAgent)
        url = settings.url
    }

    package var description: String { url }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        do {
            let response = try transport.post(batch.payload, headers: batch.headers)
            return ResponseClassifier.classify(
                status: response.status, retryAfter: response.headers["retry-after"], body: response.body, batchSize: batch.recordCount
            )
        } catch let error as TransportError {
            return .retry(reason: error.message, retryAfterSeconds: nil)
        } catch {
            return .retry(reason: "\(error)", retryAfterSeconds: nil)
        }
    }
}
