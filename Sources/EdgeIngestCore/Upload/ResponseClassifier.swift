/// Decides what an HTTP answer means (docs/PROTOCOL.md), including the
/// backends that report errors oddly: ClickHouse answers data errors with
/// 500 and a body starting `Code: N`; some servers answer 204 even when
/// they dropped data (we can only trust what they say).
package enum ResponseClassifier {
    /// ClickHouse error codes that mean the data itself is bad; every other
    /// code (252 too many parts, 159 timeout, 241 memory, …) is retried.
    static let clickHouseBadData: Set<Int> = [26, 27, 117, 6, 38, 41, 53, 69, 70, 72, 131]
    /// ClickHouse codes that no retry or bisection can fix: the table, the
    /// query or the credentials are wrong. One table for the ClickHouse
    /// sink and for a 500 with `Code: N` from any backend.
    static let clickHouseConfiguration: [Int: String] = [
        16: "no such column in the table", 60: "unknown table", 73: "unknown format", 81: "unknown database",
        62: "syntax error in the insert",
        115: "unknown setting: a ClickHouse older than 22.x lacks insert_deduplication_token",
        164: "the user is read-only", 192: "unknown user", 193: "wrong password", 194: "a password is required",
        497: "access denied", 516: "authentication failed",
    ]

    /// - Parameters:
    ///   - status: the HTTP status code.
    ///   - retryAfter: the `Retry-After` header, if any (seconds or HTTP date; only seconds are read).
    ///   - body: the response body (only its start is read).
    ///   - batchSize: how many records were sent, to check per-record rejections.
    package static func classify(status: Int, retryAfter: String?, body: [UInt8], batchSize: Int) -> UploadOutcome {
        let retrySeconds = retryAfter.flatMap { Double($0.filter { !$0.isWhitespace }) }.map { max(0, $0) }
        switch status {
        case 200..<300:
            do {
                return .stored(rejected: try perRecordRejections(body, batchSize: batchSize))
            } catch {
                // Which records were refused is unknown: keep them all
                // queued (a re-send is deduplicated by _id) until it is fixed.
                return .hold(
                    reason:
                        "HTTP \(status) with a list of rejected records that cannot be read (\(error.detail)): a protocol error in the backend; nothing was deleted"
                )
            }
        case 400, 422:
            return .badBatch(reason: "HTTP \(status)")
        case 401:
            return .unauthorized
        case 408, 425, 429:
            return .retry(reason: "HTTP \(status)", retryAfterSeconds: retrySeconds)
        case 409, 410:
            return clientResetDemand(status: status, body: body)
        case 413:
            return .tooLarge
        case 500:
            if let code = clickHouseCode(body) {
                if let meaning = clickHouseConfiguration[code] {
                    return .hold(reason: "ClickHouse code \(code) (\(meaning))")
                }
                if clickHouseBadData.contains(code) { return .badBatch(reason: "ClickHouse code \(code)") }
                return .retry(reason: "ClickHouse code \(code)", retryAfterSeconds: retrySeconds)
            }
            return .retry(reason: "HTTP 500", retryAfterSeconds: retrySeconds)
        case 501, 505:
            return .hold(reason: "HTTP \(status): the server does not implement this protocol")
        case 500..<600:
            return .retry(reason: "HTTP \(status)", retryAfterSeconds: retrySeconds)
        case 403:
            return .hold(reason: "HTTP 403: the credentials are not allowed to write here")
        case 404, 405:
            return .hold(reason: "HTTP \(status): wrong endpoint URL or method")
        default:
            return .hold(reason: "HTTP \(status): not a status this protocol defines")
        }
    }

    /// `{"error":"client_reset_required","reason":"session_lost","recoverable":false}`:
    /// the reason (letters, digits and `_` only, at most 64) and whether
    /// re-sending can succeed (the default is true).
    static func clientResetDemand(status: Int, body: [UInt8]) -> UploadOutcome {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        var reason = "HTTP \(status)"
        if let range = text.firstRange(of: "\"reason\"") {
            let rest = text[range.upperBound...].drop { $0 == " " || $0 == ":" || $0 == "\"" }
            let word = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }.prefix(64)
            if !word.isEmpty { reason = "HTTP \(status) \(word)" }
        }
        let compact = text.filter { !$0.isWhitespace }
        let recoverable = !compact.contains("\"recoverable\":false")
        return .clientReset(reason: reason, recoverable: recoverable)
    }

    /// `Code: 252. DB::Exception: …` → 252.
    static func clickHouseCode(_ body: [UInt8]) -> Int? {
        let prefix = Array("Code: ".utf8)
        guard body.count > prefix.count, body.starts(with: prefix) else { return nil }
        var value = 0
        var digits = 0
        for b in body[prefix.count...] {
            guard b >= 48, b <= 57, digits < 6 else { break }
            value = value * 10 + Int(b - 48)
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// Reads `"rejected":[{"index":N,"reason":"…","message":"…"},…]` (the
    /// message optional, added to the reason) from a JSON body
    /// (its first MiB). A body that is not a JSON object, or has no
    /// `rejected` member, rejects nothing. A `rejected` member that is not
    /// an array of objects each with an integer `index` inside the batch is
    /// a protocol error (``RejectionListError``): guessing which record was
    /// meant (`1e400` read as `1`) would dead-letter the wrong one.
    static func perRecordRejections(
        _ body: [UInt8],
        batchSize: Int
    ) throws(RejectionListError) -> [RecordRejection] {
        // `body` is bounded where it is read (``ResponseSink/maxBodyBytes``).
        guard find(Array("\"rejected\"".utf8), in: body[...]) != nil else { return [] }
        let json: JSONValue
        do {
            json = try JSONValue.parse(body, maxDepth: 16)
        } catch {
            throw RejectionListError(detail: "the answer names \"rejected\" records but is not valid JSON")
        }
        guard let list = json["rejected"], !list.isNull else { return [] }
        guard let items = list.array else {
            throw RejectionListError(detail: "\"rejected\" is not an array")
        }
        var out: [RecordRejection] = []
        for (position, item) in items.enumerated() {
            guard let raw = item["index"] else {
                throw RejectionListError(detail: "rejected[\(position)] has no \"index\"")
            }
            guard let index = raw.int64, index >= 0, index < Int64(batchSize) else {
                throw RejectionListError(
                    detail:
                        "rejected[\(position)].index is \(raw.shortText), not a record of the batch (0–\(batchSize - 1))"
                )
            }
            var reason = item["reason"]?.string.map { String($0.prefix(120)) } ?? "rejected by the backend"
            // What the backend says of it (the field, what was expected): kept with the dead letter.
            if let message = item["message"]?.string, !message.isEmpty { reason += ": " + message.prefix(200) }
            out.append(RecordRejection(index: Int(index), reason: reason))
        }
        return out
    }

    /// A 2xx answer's list of rejected records that cannot be read.
    struct RejectionListError: Error {
        var detail: String
    }

    /// The index just after the first occurrence of `needle` in `hay`.
    static func find(_ needle: [UInt8], in hay: ArraySlice<UInt8>) -> Int? {
        guard !needle.isEmpty, hay.count >= needle.count else { return nil }
        var i = hay.startIndex
        while i + needle.count <= hay.endIndex {
            if hay[i] == needle[0], hay[i..<i + needle.count].elementsEqual(needle) { return i + needle.count }
            i += 1
        }
        return nil
    }
}

extension JSONValue {
    /// The value as a short text for an error message (never a payload:
    /// strings and containers are named by kind).
    fileprivate var shortText: String {
        switch self {
        case .null: "null"
        case .bool(let b): "\(b)"
        case .int(let i): "\(i)"
        case .double(let d): "\(d)"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
