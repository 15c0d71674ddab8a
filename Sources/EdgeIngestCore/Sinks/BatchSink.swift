import Logging

/// Where confirmed records go: the ``Uploader`` hands a sink one batch of
/// records of one type at a time and deletes them from the queue only when
/// the sink says they are stored.
///
/// A sink never throws for a failed delivery: it answers with the
/// ``UploadOutcome`` that says what to do (retry, bisect, hold, …), so every
/// sink shares the uploader's backoff, dead-letter and hold behaviour.
/// A sink is created and used on the uploader's thread only.
///
/// ```swift
/// struct PrintingSink: BatchSink {
///     var description: String { "stdout" }
///     func deliver(_ batch: SinkBatch) -> UploadOutcome {
///         print(String(decoding: batch.payload, as: UTF8.self), terminator: "")
///         return .stored(rejected: [])
///     }
/// }
/// ```
package protocol BatchSink: AnyObject, CustomStringConvertible {
    /// Stores `batch` or says why not. Must be idempotent by `_id`: the
    /// same records come again after a lost acknowledgement or a crash.
    func deliver(_ batch: SinkBatch) -> UploadOutcome
    /// The longest one ``deliver(_:)`` may take with the sink's own
    /// timeouts; longer means wedged (the watchdog stops being fed). Nil:
    /// the uploader's HTTP connect + request timeouts.
    var deliveryTimeLimitMilliseconds: Int? { get }
    /// Gives the sink the uploader's logger, for what only it can tell (a
    /// failover to another upstream). The default ignores it.
    func attach(logger: Logger)
    /// Gives the sink the uploader's state, for counts only it knows (the
    /// records a backend dropped as duplicates). The default ignores it.
    func attach(state: UploadState)
}

extension BatchSink {
    package var deliveryTimeLimitMilliseconds: Int? { nil }
    package func attach(logger: Logger) {}
    package func attach(state: UploadState) {}
}

/// One delivery attempt: records of one type, as the NDJSON the queue holds
/// (each line a flat JSON object with `_id`, ending in "\n").
package struct SinkBatch {
    /// The record type of every record.
    package var type: String
    /// Stays the same across retries of the same records (docs/PROTOCOL.md).
    package var idempotencyKey: String
    package var payload: ArraySlice<UInt8>
    package var recordCount: Int
    /// Credentials and protocol headers for HTTP sinks; others ignore them.
    package var headers: [(String, String)]

    package init(
        type: String,
        idempotencyKey: String,
        payload: ArraySlice<UInt8>,
        recordCount: Int,
        headers: [(String, String)] = []
    ) {
        self.type = type
        self.idempotencyKey = idempotencyKey
        self.payload = payload
        self.recordCount = recordCount
        self.headers = headers
    }

    /// Calls `body` with each record's index in the batch and its JSON line
    /// (without the "\n"), in order.
    package func forEachRecord(_ body: (Int, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try payload.withUnsafeBytes { bytes in
            try forEachLine(in: bytes) { index, line in
                try body(index, line)
                return true
            }
        }
    }
}

/// Builds the sink on the uploader's thread when it starts.
package typealias SinkFactory = @Sendable () throws -> any BatchSink
