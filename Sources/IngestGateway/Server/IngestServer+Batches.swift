import EdgeIngestCore
import Logging

/// A received batch, as a pipeline of small steps: who sends it, which
/// protocol, schema and session, the account's quota, the body undone
/// (gzip), its records validated, then stored (deduplicated by `_id`, in
/// one commit) and answered. Each step either returns what the next needs
/// or throws a ``BatchRefusal``, turned into its HTTP answer in one place;
/// nothing of a refused batch is stored. Each exit has an in-process test
/// (`Tests/IngestAgentTests/BatchHandlerTests.swift`).
extension IngestServer {
    /// The headers of a batch request that decide how it is stored.
    struct BatchHeaders {
        var tenant: Tenant
        var session: (nonce: String, epoch: Int64)?
        var recordType: String?
    }

    /// A batch's records, validated: what is stored and what was refused, by line.
    struct DecodedBatch {
        var batch: EncodedBatch
        var rejections: [BatchDecoder.Rejection]
        var bodyBytes: Int
    }

    func receiveBatch(_ request: HTTPRequest, peer: String) -> HTTPServerResponse {
        do {
            let headers = try batchHeaders(of: request, peer: peer)
            try chargeableNow(headers.tenant, peer: peer)
            let body = try decodedBody(of: request)
            let decoded = try records(in: body, headers: headers)
            // Every line counts, stored or refused (owner refusals move lines, not add them).
            quotas.charge(
                tenant: headers.tenant.id ?? "",
                records: decoded.batch.count + decoded.rejections.count,
                bytes: body.count
            )
            let result = try store(decoded, headers: headers, peer: peer)
            return answer(decoded, result: result, request: request, peer: peer)
        } catch let refusal as BatchRefusal {
            if case .clientReset(let reason, _) = refusal.kind {
                logger.warning(
                    "Told a client to reset",
                    metadata: [
                        "ingest.input": "\(inputName)", "ingest.peer": "\(peer)", "ingest.reason": "\(reason)",
                        "ingest.detail": "\(refusal.message)",
                    ]
                )
            }
            return refusal.response
        } catch {
            logger.error(
                "Could not store a received batch",
                metadata: ["ingest.input": "\(inputName)", "error": "\(error)"]
            )
            return BatchRefusal.error(500, "storage", "this server could not store the batch; try again later")
                .response
        }
    }

    /// Who sends, in which protocol version, schema and session.
    func batchHeaders(of request: HTTPRequest, peer: String) throws(BatchRefusal) -> BatchHeaders {
        guard let tenant = writer(of: request) else {
            throw .error(
                401,
                "unauthorized",
                "send a valid access token (Authorization: Bearer …)",
                headers: [("WWW-Authenticate", "Bearer")]
            )
        }
        if let version = request.header("edgeingest-protocol"), version != "1" {
            throw .error(501, "protocol_version", "this server speaks EdgeIngest-Protocol 1, not \(quoted(version))")
        }
        if let text = request.header("edgeingest-schema-version") {
            guard let version = Int64(text), version >= 0 else {
                throw .error(400, "bad_header", "EdgeIngest-Schema-Version must be a non-negative integer")
            }
            if version > schemaVersion {
                throw .clientReset(
                    "schema_too_new",
                    recoverable: false,
                    why: "the client's schema version \(version) is newer than this server's \(schemaVersion)"
                )
            }
        }
        var session: (nonce: String, epoch: Int64)?
        if let text = request.header("edgeingest-session") {
            guard let dash = text.lastIndex(of: "-"), let epoch = Int64(text[text.index(after: dash)...]),
                !text[..<dash].isEmpty, text.utf8.count <= 128
            else {
                throw .error(400, "bad_header", "EdgeIngest-Session must be '<nonce>-<epoch>'")
            }
            session = (String(text[..<dash]), epoch)
        }
        return BatchHeaders(
            tenant: tenant,
            session: session,
            recordType: request.header("edgeingest-record-type") ?? context.defaultType
        )
    }

    /// An account in debt is refused before its body is decompressed or parsed.
    func chargeableNow(_ tenant: Tenant, peer: String) throws(BatchRefusal) {
        guard case .wait(let seconds, let log) = quotas.check(tenant: tenant.id ?? "", now: monotonicSeconds())
        else { return }
        observer.throttled()
        if log {
            logger.warning(
                "An account sends more than its quota; its batches are answered 429 until it slows down (logged once a minute per account)",
                metadata: [
                    "ingest.input": "\(inputName)", "ingest.peer": "\(peer)",
                    "ingest.account": "\(tenant.id ?? "-")", "ingest.retry_after_s": "\(seconds)",
                ]
            )
        }
        throw .error(
            429,
            "quota_exceeded",
            "this account sent more than its quota (\(quotaText)): try again in \(seconds) s",
            headers: [("Retry-After", String(seconds))]
        )
    }

    /// The body with its Content-Encoding undone, bounded by max_body_bytes.
    func decodedBody(of request: HTTPRequest) throws(BatchRefusal) -> [UInt8] {
        switch request.header("content-encoding")?.lowercased() {
        case nil, "identity":
            return request.body
        case "gzip":
            do {
                return try Gzip.decompress(request.body, limit: settings.limits.maxBodyBytes)
            } catch is Gzip.OutputTooLarge {
                throw .error(
                    413,
                    "too_large",
                    "the body decompresses to more than max_body_bytes (\(settings.limits.maxBodyBytes))"
                )
            } catch {
                throw .error(400, "bad_gzip", "the gzip body is damaged")
            }
        case let other?:
            throw .error(
                415,
                "unsupported_encoding",
                "Content-Encoding \(quoted(other)) is not supported: send gzip or identity"
            )
        }
    }

    /// The body's records validated against the declared types (and owned,
    /// with `owner_field`). A bound on records as on bytes: a 2 KiB gzip body
    /// of newlines would otherwise cost a million rejections in the answer
    /// and the log.
    func records(in body: [UInt8], headers: BatchHeaders) throws -> DecodedBatch {
        do {
            if let field = settings.ownerField, let owner = headers.tenant.id {
                // Records the server edits (fills in the owner) are decoded, then encoded.
                var (records, rejections) = try decoder.decode(
                    body,
                    recordType: headers.recordType,
                    maxRecords: Self.maxRecordsPerBatch
                )
                (records, rejections) = Self.owned(records, rejections: rejections, by: owner, field: field)
                let batch = try EncodedBatch(records: records, types: decoder.typesByName, queueName: inputName)
                return DecodedBatch(batch: batch, rejections: rejections, bodyBytes: body.count)
            }
            let (batch, rejections) = try decoder.encode(
                body,
                recordType: headers.recordType,
                maxRecords: Self.maxRecordsPerBatch
            )
            return DecodedBatch(batch: batch, rejections: rejections, bodyBytes: body.count)
        } catch is BatchDecoder.TooManyRecords {
            throw BatchRefusal.error(
                413,
                "too_many_records",
                "at most \(Self.maxRecordsPerBatch) records per batch: send smaller batches"
            )
        }
        // Any other error: the decoder's types are the queue's, so a type it
        // refuses is a bug here, not the client's (500, logged by the caller).
    }

    /// Commits the batch — deduplicated by `_id` against what was received
    /// before, with the session's epoch checked — before the answer.
    func store(_ decoded: DecodedBatch, headers: BatchHeaders, peer: String) throws -> AppendResult {
        let outcome: ReceiveOutcome
        do {
            outcome = try queue.receive(
                decoded.batch,
                receipt: Receipt(
                    dedupWindowMilliseconds: settings.dedupWindowSeconds * 1000,
                    session: headers.session,
                    tenant: headers.tenant.id
                ),
                counters: Self.rejectedByReason(decoded.rejections).reduce(into: [:]) {
                    $0["rejected." + $1.key] = $1.value
                }
            )
        } catch let error as EdgeIngestError where error.code == .queueFull {
            throw BatchRefusal.error(
                413,
                "too_large",
                "the batch can never fit this server's queue bound: send smaller batches"
            )
        } catch let error as EdgeIngestError where error.code == .diskFull {
            logger.error(
                "The queue's disk is full; answering batches 503 until space returns",
                metadata: ["ingest.input": "\(inputName)"]
            )
            throw BatchRefusal.error(
                503,
                "disk_full",
                "this server's disk is full; try again later",
                headers: [("Retry-After", "10")]
            )
        }
        switch outcome {
        case .queueFull:
            observer.queueFull(problem: "the queue is full; batches are answered 503 until uploads free space")
            throw BatchRefusal.error(
                503,
                "queue_full",
                "this server's queue is full; try again later",
                headers: [("Retry-After", "5")]
            )
        case .staleSession(let seen):
            throw BatchRefusal.clientReset(
                "session_superseded",
                recoverable: true,
                why:
                    "the client's session epoch \(headers.session?.epoch ?? 0) is older than \(seen), already seen (a client restored from a backup?)"
            )
        case .stored(let result):
            return result
        }
    }

    /// The 200: what was stored, what was a re-send, what was refused by
    /// line (a conflict — a known `_id` with other content — among them);
    /// counted and logged (rejections bounded per batch).
    func answer(
        _ decoded: DecodedBatch,
        result: AppendResult,
        request: HTTPRequest,
        peer: String
    ) -> HTTPServerResponse {
        var rejections = decoded.rejections
        if !result.conflicts.isEmpty {
            rejections = Self.adding(conflicts: result.conflicts, of: decoded.batch, to: rejections)
        }
        let rejectedByReason = Self.rejectedByReason(rejections)
        logRejections(rejections, request: request, peer: peer)
        let lines = Int64(decoded.batch.count + rejections.count)
        observer.answered(
            lines: lines,
            accepted: Int64(result.accepted),
            duplicates: Int64(result.duplicates),
            rejectedByReason: rejectedByReason
        )
        if result.accepted > 0 { context.committed?.wake() }
        var fields: [(String, JSONValue)] = [
            ("accepted", .int(Int64(result.accepted))), ("duplicate", .int(Int64(result.duplicates))),
        ]
        if result.droppedIncoming > 0 { fields.append(("dropped", .int(Int64(result.droppedIncoming)))) }
        if !rejections.isEmpty {
            fields.append(
                (
                    "rejected",
                    .array(
                        rejections.map {
                            .object([
                                ("index", .int(Int64($0.index))), ("reason", .string($0.reason)),
                                ("message", .string($0.message)),
                            ])
                        }
                    )
                )
            )
        }
        return .json(200, object: fields)
    }

    private func logRejections(_ rejections: [BatchDecoder.Rejection], request: HTTPRequest, peer: String) {
        for rejection in rejections.prefix(Self.loggedRejectionsPerBatch) {
            logger.warning(
                "Rejected a received record",
                metadata: [
                    "ingest.input": "\(inputName)", "ingest.peer": "\(peer)",
                    "ingest.batch": "\(request.header("idempotency-key").map(quoted) ?? "-")",
                    "ingest.index": "\(rejection.index)", "ingest.reason": "\(rejection.reason)",
                    "ingest.detail": "\(rejection.message)",
                ]
            )
        }
        if rejections.count > Self.loggedRejectionsPerBatch {
            logger.warning(
                "Rejected more records of the same batch (not logged one by one; the answer lists them, status counts them)",
                metadata: [
                    "ingest.input": "\(inputName)", "ingest.peer": "\(peer)",
                    "ingest.batch": "\(request.header("idempotency-key").map(quoted) ?? "-")",
                    "ingest.more": "\(rejections.count - Self.loggedRejectionsPerBatch)",
                ]
            )
        }
    }

    static func rejectedByReason(_ rejections: [BatchDecoder.Rejection]) -> [String: Int64] {
        rejections.reduce(into: [String: Int64]()) { $0[$1.reason, default: 0] += 1 }
    }
}
