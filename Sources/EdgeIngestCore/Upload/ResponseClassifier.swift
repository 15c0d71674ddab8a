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
            return .stored(rejected: perRecordRejections(body, batchSize: batchSize))
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

    /// Reads `"rejected":[{"index":N,"reason":"…"},…]` from a JSON body.
    /// A tolerant byte scan, not a full parser: anything else in the body
    /// is ignored, and an index outside the batch is skipped.
    static func perRecordRejections(_ body: [UInt8], batchSize: Int) -> [RecordRejection] {
        let body = body.prefix(1 << 20)
        guard let start = find(Array("\"rejected\"".utf8), in: body[...]) else { return [] }
        var out: [RecordRejection] = []
        var rest = body[start...]
        let indexKey = Array("\"index\"".utf8)
        let reasonKey = Array("\"reason\"".utf8)
        while let afterIndex = find(indexKey, in: rest) {
            var i = afterIndex
            while i < rest.endIndex, rest[i] == UInt8(ascii: ":") || rest[i] == UInt8(ascii: " ") { i += 1 }
            var index = 0
            var digits = 0
            while i < rest.endIndex, rest[i] >= 48, rest[i] <= 57, digits < 9 {
                index = index * 10 + Int(rest[i] - 48)
                digits += 1
                i += 1
            }
            rest = rest[i...]
            guard digits > 0, index < batchSize else { continue }
            var reason = "rejected by the backend"
            let objectEnd = rest.firstIndex(of: UInt8(ascii: "}")) ?? rest.endIndex
            if let afterReason = find(reasonKey, in: rest[..<objectEnd]) {
                var j = afterReason
                while j < objectEnd, rest[j] == UInt8(ascii: ":") || rest[j] == UInt8(ascii: " ") { j += 1 }
                if j < objectEnd, rest[j] == UInt8(ascii: "\"") {
                    let textStart = j + 1
                    let textEnd = rest[textStart..<objectEnd].firstIndex(of: UInt8(ascii: "\"")) ?? objectEnd
                    reason = String(decoding: rest[textStart..<min(textEnd, textStart + 120)], as: UTF8.self)
                }
            }
            out.append(RecordRejection(index: index, reason: reason))
        }
        return out
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
