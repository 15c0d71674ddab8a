/// What a backend's answer to one batch means for the uploader (package API:
/// sinks return it, apps never see it, so cases can be added). Decided by
/// ``ResponseClassifier``, a pure function with table tests.
package enum UploadOutcome: Equatable, Sendable {
    /// Stored. `rejected` lists records the backend refused one by one
    /// (index in the batch, reason): they go to the dead-letter table.
    case stored(rejected: [RecordRejection])
    /// A passing failure: retry the same batch after a backoff (at least
    /// `retryAfterSeconds` when the server said so).
    case retry(reason: String, retryAfterSeconds: Double?)
    /// The batch holds bad data: split it to find the poison record(s).
    case badBatch(reason: String)
    /// The body is too large for the server: split it and lower the size.
    case tooLarge
    /// The credentials were refused: refresh them once, then hold.
    case unauthorized
    /// The backend requires a client reset (409/410): the configured
    /// ``ClientResetMode`` decides. `recoverable` is false when the backend
    /// said re-sending the pending records cannot succeed (a breaking
    /// schema change).
    case clientReset(reason: String, recoverable: Bool)
    /// A configuration problem (403, 404, …): keep everything, stop sending,
    /// report the reason.
    case hold(reason: String)
}

extension UploadOutcome {
    /// Whether the batch was stored (possibly with per-record rejections).
    package var isStored: Bool {
        if case .stored = self { return true }
        return false
    }

    /// Whether the backend refused the batch for its content (it is split to find the refused records).
    package var isBadBatch: Bool {
        if case .badBatch = self { return true }
        return false
    }

    /// A short reason for the log and status ("HTTP 503", "refused as too
    /// large (HTTP 413)"); never a payload.
    package var reason: String {
        switch self {
        case .stored(let rejected): return rejected.isEmpty ? "stored" : "stored, \(rejected.count) refused"
        case .retry(let reason, _), .badBatch(let reason), .clientReset(let reason, _), .hold(let reason): return reason
        case .tooLarge: return "refused as too large (HTTP 413)"
        case .unauthorized: return "the credentials were refused (HTTP 401)"
        }
    }
}

/// One record the backend refused inside an otherwise stored batch.
package struct RecordRejection: Equatable, Sendable {
    package var index: Int
    package var reason: String
    package init(index: Int, reason: String) {
        self.index = index
        self.reason = reason
    }
}
