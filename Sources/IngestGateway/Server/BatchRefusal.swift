import EdgeIngestCore

/// Why a received batch was not stored: the one error every step of
/// ``IngestServer``'s batch pipeline throws, turned into its HTTP answer
/// in one place (``response``). Nothing of a refused batch is stored.
///
/// ```swift
/// do {
///     let tenant = try server.writer(of: request)   // throws .unauthorized
///     …
/// } catch {
///     return error.response                          // 401 with WWW-Authenticate
/// }
/// ```
struct BatchRefusal: Error, Equatable {
    enum Kind: Equatable {
        /// `{"error": code, "message": …}` with `status`.
        case error(status: Int, code: String)
        /// 409 `{"error": "client_reset_required", "reason": …, "recoverable": …}`.
        case clientReset(reason: String, recoverable: Bool)
    }

    var kind: Kind
    /// Said to the client (never a payload or a secret).
    var message: String
    var headers: [(name: String, value: String)] = []

    static func == (a: BatchRefusal, b: BatchRefusal) -> Bool {
        a.kind == b.kind && a.message == b.message && a.headers.elementsEqual(b.headers) { $0 == $1 }
    }

    static func error(
        _ status: Int,
        _ code: String,
        _ message: String,
        headers: [(name: String, value: String)] = []
    ) -> BatchRefusal {
        BatchRefusal(kind: .error(status: status, code: code), message: message, headers: headers)
    }

    static func clientReset(_ reason: String, recoverable: Bool, why: String) -> BatchRefusal {
        BatchRefusal(kind: .clientReset(reason: reason, recoverable: recoverable), message: why)
    }

    /// The HTTP answer.
    var response: HTTPServerResponse {
        switch kind {
        case .error(let status, let code):
            return .error(status, code, message, headers: headers)
        case .clientReset(let reason, let recoverable):
            return .json(
                409,
                [
                    "error": .string("client_reset_required"), "reason": .string(reason),
                    "recoverable": .bool(recoverable),
                ]
            )
        }
    }

    /// The HTTP status of the answer.
    var status: Int {
        switch kind {
        case .error(let status, _): status
        case .clientReset: 409
        }
    }
}
