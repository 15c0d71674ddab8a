import EdgeIngestCore
import Logging

/// The server side of docs/PROTOCOL.md, behind the HTTP input: logins,
/// bearer checks, and batches validated, deduplicated by `_id` and
/// committed to this agent's queue **before** the 2xx.
///
/// Routes:
/// - `POST /ingest/v1/batches` and `POST /ingest/v1/apps/<app id>/batches`
/// - `POST /auth/v1/apps/<app id>/login`, `/refresh`, `/logout`
/// - `GET /healthz`: 200 while the agent runs.
package final class IngestServer: HTTPHandler {
    let context: GatewayContext
    let accounts: ServerAccounts
    let tokens: TokenSigner
    let decoder: BatchDecoder
    /// Failed logins per account and address (``LoginThrottle``).
    let loginThrottle = LoginThrottle()
    /// Records and bytes a second per account (``AccountQuotas``).
    let quotas: AccountQuotas
    /// Refused and throttled logins, a flood summarized (``LoginLog``).
    let loginLog: LoginLog

    package init(context: GatewayContext, accounts: ServerAccounts, tokens: TokenSigner) {
        self.context = context
        let settings = context.settings
        quotas = AccountQuotas(
            limits: .init(
                recordsPerSecond: settings.quotaRecordsPerSecond.map(Double.init),
                bytesPerSecond: settings.quotaBytesPerSecond.map(Double.init),
                burstSeconds: Double(settings.quotaBurstSeconds)
            )
        )
        decoder = BatchDecoder(types: context.types, inputName: context.name)
        loginLog = LoginLog(input: context.name, logger: context.logger)
        self.accounts = accounts
        self.tokens = tokens
    }

    var settings: GatewaySettings { context.settings }
    var inputName: String { context.name }
    var observer: any GatewayObserver { context.observer }
    var logger: Logger { context.logger }
    var queue: DurableQueue { context.queue }
    /// Batches from clients with a newer schema version get a client reset.
    var schemaVersion: Int64 { context.queue.configuration.schemaVersion }

    package func respond(to request: HTTPRequest, peer: String) -> HTTPServerResponse {
        loginLog.flushExpired()
        let path = request.path.split(separator: "/", omittingEmptySubsequences: true)
        switch (path.first, path.count) {
        case ("healthz", 1):
            return request.method == "GET" || request.method == "HEAD"
                ? HTTPServerResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("ok\n".utf8))
                : methodNotAllowed("GET")
        case ("ingest", 3) where path[1] == "v1" && path[2] == "batches",
            ("ingest", 5) where path[1] == "v1" && path[2] == "apps" && path[4] == "batches":
            if path.count == 5, let appID = settings.appID, path[3] != appID { return unknownApp(path[3]) }
            guard request.method == "POST" else { return methodNotAllowed("POST") }
            var response = receiveBatch(request, peer: peer)
            // Valid credentials (or none required and a whole request): its
            // connection keeps its slot against slow newcomers.
            response.trustsClient = response.status != 401
            return response
        case ("auth", 5) where path[1] == "v1" && path[2] == "apps":
            if let appID = settings.appID, path[3] != appID { return unknownApp(path[3]) }
            guard request.method == "POST" else { return methodNotAllowed("POST") }
            switch path[4] {
            case "login":
                var response = login(request, peer: peer)
                response.trustsClient = response.status == 200
                return response
            case "refresh": return refresh(request)
            case "logout": return HTTPServerResponse(status: 204)
            default: break
            }
        default:
            break
        }
        return .error(404, "not_found", "no such endpoint: see docs/PROTOCOL.md")
    }

    private func methodNotAllowed(_ allowed: String) -> HTTPServerResponse {
        .error(405, "method_not_allowed", "use \(allowed)", headers: [("Allow", allowed)])
    }

    private func unknownApp(_ id: Substring) -> HTTPServerResponse {
        .error(404, "unknown_app", "this server serves app \(quoted(settings.appID ?? "")), not \(quoted(id))")
    }

    // MARK: Identity

    private func login(_ request: HTTPRequest, peer: String) -> HTTPServerResponse {
        var parser = NDJSONParser()
        var line = ParsedLine()
        var fields: [String: String] = [:]
        let problem = request.body.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> LineRejection? in
            do throws(LineRejection) {
                try parser.parse(raw, into: &line)
                for field in line.fields {
                    if case .string(let s) = try line.value(field) { fields[line.keyString(field)] = s }
                }
                return nil
            } catch {
                return error
            }
        }
        if let problem { return .error(400, "bad_login", "the login body is not a JSON object: \(problem.message)") }
        let provider = fields["provider"] ?? ""
        // Throttled before the credentials are checked: the same answer
        // whether the account exists, and no password hashing to spend.
        let account = provider == "email-password" ? fields["email"] : nil
        let address = LoginThrottle.address(ofPeer: peer)
        let now = wallClockMilliseconds() / 1000
        if provider != "anonymous", let wait = loginThrottle.delay(account: account, address: address, now: now) {
            loginLog.log(
                .throttled,
                metadata: [
                    "ingest.input": "\(inputName)", "ingest.peer": "\(peer)", "auth.provider": "\(provider)",
                    "auth.retry_after_s": "\(wait)",
                ]
            )
            return .error(
                429,
                "too_many_logins",
                "too many failed logins: try again in \(wait) s",
                headers: [("Retry-After", String(wait))]
            )
        }
        let userID: String?
        switch provider {
        case "anonymous":
            userID = accounts.anonymous ? "anon-" + Secrets.hex(Secrets.randomBytes(8)) : nil
        case "api-key":
            userID = fields["key"].flatMap { accounts.apiKeyName(for: $0) }.map { "key-" + $0 }
        case "email-password":
            userID = fields["email"].flatMap { email in
                fields["password"].flatMap { accounts.userID(email: email, password: $0) }
            }
        default:
            return .error(400, "bad_login", "provider must be anonymous, api-key or email-password")
        }
        guard let userID else {
            if provider != "anonymous" { loginThrottle.failed(account: account, address: address, now: now) }
            // Never the key, email or password: the provider and the peer only.
            loginLog.log(
                .refused,
                metadata: ["ingest.input": "\(inputName)", "ingest.peer": "\(peer)", "auth.provider": "\(provider)"]
            )
            return .error(401, "login_refused", "these credentials are not accepted")
        }
        loginThrottle.succeeded(account: account)
        return .json(
            200,
            [
                "user_id": .string(userID), "access_token": .string(tokens.issue(.access, userID: userID, now: now)),
                "refresh_token": .string(tokens.issue(.refresh, userID: userID, now: now)),
                "expires_in": .int(TokenSigner.accessSeconds),
            ]
        )
    }

    private func refresh(_ request: HTTPRequest) -> HTTPServerResponse {
        let now = wallClockMilliseconds() / 1000
        guard let token = request.bearerToken, let userID = tokens.verify(token, kind: .refresh, now: now),
            accounts.exists(userID: userID)
        else {
            return .error(
                401,
                "session_over",
                "the refresh token is not valid: log in again",
                headers: [("WWW-Authenticate", "Bearer")]
            )
        }
        return .json(
            200,
            [
                "access_token": .string(tokens.issue(.access, userID: userID, now: now)),
                "expires_in": .int(TokenSigner.accessSeconds),
            ]
        )
    }

    /// The quota in words, for the 429's message.
    var quotaText: String {
        [
            settings.quotaRecordsPerSecond.map { "\($0) records/s" },
            settings.quotaBytesPerSecond.map { "\($0) bytes/s" },
        ].compactMap { $0 }.joined(separator: ", ")
    }

    /// Who may write with this request: nil when nobody (no valid
    /// credentials); else the tenant its records belong to — nil inside
    /// when the server has no accounts.
    func writer(of request: HTTPRequest) -> Tenant? {
        // Mutual TLS: a client whose certificate the CA signed is its own account.
        if request.bearerToken == nil, settings.tlsClientCAFile != nil, let name = request.clientCertificateName {
            return Tenant(id: "cert-" + name)
        }
        guard accounts.requiresAuthentication else { return Tenant(id: nil) }
        guard let token = request.bearerToken else { return nil }
        if let userID = tokens.verify(token, kind: .access, now: wallClockMilliseconds() / 1000) {
            guard accounts.exists(userID: userID) else { return nil }
            // Anonymous users get a new id at every login: one space for all of them.
            return Tenant(id: userID.hasPrefix("anon-") ? "anonymous" : userID)
        }
        return accounts.apiKeyName(for: token).map { Tenant(id: "key-" + $0) }
    }

    /// The account a batch's records belong to (``Receipt/tenant``).
    struct Tenant {
        /// The user id; nil on a server without accounts.
        var id: String?
    }

    // MARK: Batches

    /// The records with `field` set to `owner` where they had none, and
    /// those naming another owner refused (`owner_mismatch`), by line as
    /// ``adding(conflicts:of:to:)`` counts them.
    static func owned(
        _ records: [Record],
        rejections: [BatchDecoder.Rejection],
        by owner: String,
        field: String
    ) -> ([Record], [BatchDecoder.Rejection]) {
        let refused = Set(rejections.map(\.index))
        var kept: [Record] = []
        kept.reserveCapacity(records.count)
        var out = rejections
        var line = 0
        for record in records {
            while refused.contains(line) { line += 1 }
            defer { line += 1 }
            switch record[field] {
            case .string(owner)?:
                kept.append(record)
            case nil:
                if let stamped = record.setting(field, to: .string(owner)) {
                    kept.append(stamped)
                } else {
                    out.append(
                        .init(
                            index: line,
                            reason: "owner_mismatch",
                            message: "\(field) is not a string field of \(record.type.name)"
                        )
                    )
                }
            case _?:
                out.append(
                    .init(
                        index: line,
                        reason: "owner_mismatch",
                        message: "\(field) must be the sending account's user id (or left out: this server fills it in)"
                    )
                )
            }
        }
        return (kept, out.sorted { $0.index < $1.index })
    }

    /// `rejections` with a `duplicate_id` one for each conflicting record
    /// (`conflicts`: indices into `batch`), by line: record k is on the
    /// k-th line that was not rejected.
    static func adding(
        conflicts: [Int],
        of batch: EncodedBatch,
        to rejections: [BatchDecoder.Rejection]
    ) -> [BatchDecoder.Rejection] {
        let refused = Set(rejections.map(\.index))
        var out = rejections
        var line = 0
        var record = 0
        for conflict in conflicts {
            while true {
                if !refused.contains(line) {
                    if record == conflict { break }
                    record += 1
                }
                line += 1
            }
            out.append(
                BatchDecoder.Rejection(
                    index: line,
                    reason: "duplicate_id",
                    message:
                        "_id \(batch.id(at: conflict).hexString) was already received with other content; a re-send must be identical, and a new reading needs a new _id"
                )
            )
        }
        return out.sorted { $0.index < $1.index }
    }

    /// Records (lines) one batch may hold: 413 `too_many_records` above.
    static let maxRecordsPerBatch = 10_000

    /// Rejections logged one by one per batch; the rest in one line.
    static let loggedRejectionsPerBatch = 10
}
