import EdgeIngestCore

/// `[upload]`: batching, linger, retries and shutdown (every sink), the
/// HTTP client's keys (the sinks over HTTP), and `sink` with the keys of
/// the sink it names (each sink's own file under `Sinks/`).
/// ``UploadSettings`` and ``HTTPSettings`` hold the defaults.
extension ConfigurationDecoder {
    /// The keys every sink shares.
    static let batchingKeys: Set<String> = [
        "max_records", "max_bytes", "linger_ms", "retry_base_ms", "retry_cap_ms", "max_retries", "shutdown_timeout_ms",
        "hold_ms",
        "client_id", "sink", "unhealthy_after_s",
    ]
    /// Every key `[upload]` accepts: the batching keys and every sink's.
    static let uploadKeys = batchingKeys.union(SinkSettings.keys).union(routeKeys)

    mutating func decodeUpload(_ t: TOMLTable?, environment: [String: String]) -> (UploadSettings, SinkSettings)? {
        guard let t else { return nil }
        rejectUnknown(t, known: Self.uploadKeys, prefix: "upload.")
        guard let sink = decodeSink(t, environment: environment) else { return nil }
        guard type(of: sink.configuration).isOverHTTP else {
            // Batching, retries and shutdown apply to every sink; the
            // HTTP settings stay empty (the uploader does not read them).
            return (decodeBatching(t, into: UploadSettings(http: HTTPSettings(url: ""), clientID: hostName())), sink)
        }
        guard let http = decodeHTTP(t, environment: environment) else { return nil }
        return (decodeBatching(t, into: UploadSettings(http: http, clientID: hostName())), sink)
    }

    /// The HTTP client's keys, for the sinks over HTTP; nil after a problem.
    mutating func decodeHTTP(_ t: TOMLTable, environment: [String: String]) -> HTTPSettings? {
        let upstreams = t["urls"].map { strings($0, "upload.urls") } ?? []
        if t["urls"] != nil, t["url"] != nil {
            problem(
                t["urls"],
                "upload.urls",
                "and upload.url both name the backend: keep one (urls for several upstreams)"
            )
        }
        if let v = t["urls"], upstreams.isEmpty {
            problem(v, "upload.urls", "is empty: list the upstreams, the one to use first first")
        }
        guard let url = upstreams.first ?? string(t["url"], "upload.url") else {
            problem(
                nil,
                "upload.url",
                "is required in [upload]: the backend's ingest endpoint, e.g. \"https://backend.example/ingest/v1/batches\""
            )
            return nil
        }
        for (key, value) in [("url", url)] + upstreams.dropFirst().map({ ("urls", $0) })
        where !(value.hasPrefix("http://") || value.hasPrefix("https://")) {
            problem(
                t[key],
                "upload.\(key)",
                "must start with http:// or https://, got \"\(redactedURL(value).prefix(40))\""
            )
            return nil
        }
        var http = HTTPSettings(url: url)
        http.failoverURLs = Array(upstreams.dropFirst())
        if let v = t["failover_after"], let n = integer(v, "upload.failover_after", min: 1) {
            http.failoverAfterFailures = Int(min(n, 1_000))
        }
        if let v = t["failback_s"], let n = integer(v, "upload.failback_s", min: 10) {
            http.failbackMilliseconds = n * 1_000
        }
        if let v = t["gzip"], let b = bool(v, "upload.gzip") { http.gzip = b }
        if let v = t["connect_timeout_ms"], let n = integer(v, "upload.connect_timeout_ms", min: 1) {
            http.connectTimeoutMilliseconds = Int(n)
        }
        if let v = t["timeout_ms"], let n = integer(v, "upload.timeout_ms", min: 1) {
            http.timeoutMilliseconds = Int(n)
        }
        http.caFile = string(t["ca_file"], "upload.ca_file")
        http.caPath = string(t["ca_path"], "upload.ca_path")
        http.clientCertificate = string(t["client_certificate"], "upload.client_certificate")
        http.clientKey = string(t["client_key"], "upload.client_key")
        http.proxy = string(t["proxy"], "upload.proxy")
        if let v = t["headers"] {
            if case .table(let headers) = v.kind {
                for entry in headers.entries {
                    if let value = string(entry.value, "upload.headers.\(entry.key)") {
                        http.headers[entry.key] = value
                    }
                }
            } else {
                problem(
                    v,
                    "upload.headers",
                    "must be a table of header names to values, e.g. { \"X-Site\" = \"north\" }"
                )
            }
        }
        // The token: a file (mode 0600 or a systemd credential), never the config itself.
        http.bearerToken = secret(
            t["token_file"],
            "upload.token_file",
            credential: (credentialSection ?? "upload") + "-token",
            environment: environment,
            required: false
        )
        return http
    }

    /// `upload.sink` and what it needs; nil after a problem. A key of
    /// another sink, or an HTTP key under a sink not over HTTP, is a
    /// problem: it would silently do nothing.
    mutating func decodeSink(_ t: TOMLTable, environment: [String: String]) -> SinkSettings? {
        let name = t["sink"].flatMap { string($0, "upload.sink") } ?? "ingest"
        for (key, owners) in SinkSettings.sinkOnlyKeys.sorted(by: { $0.key < $1.key })
        where !owners.contains(name) && t[key] != nil {
            let sinks = owners.map { "\"\($0)\"" }.joined(separator: " or ")
            problem(t[key], "upload.\(key)", "is for sink = \(sinks); this [upload] has sink = \"\(name)\"")
        }
        guard let kind = SinkSettings.kinds.first(where: { $0.name == name }) else {
            let names = SinkSettings.names
            notOneOf(t["sink"], "upload.sink", name, "must be one of \(names.joined(separator: ", "))", choices: names)
            return nil
        }
        if !kind.isOverHTTP {
            for key in SinkSettings.httpKeys.subtracting(kind.httpKeysRead).sorted() where t[key] != nil {
                problem(t[key], "upload.\(key)", "only applies to HTTP sinks; sink = \"\(name)\" \(kind.withoutHTTP)")
            }
        }
        return kind.decode(t, &self, environment: environment).map(SinkSettings.init)
    }

    /// The keys every sink shares: batch size, linger, retries, shutdown.
    mutating func decodeBatching(_ t: TOMLTable, into settings: UploadSettings) -> UploadSettings {
        var u = settings
        if let v = t["max_records"], let n = integer(v, "upload.max_records", min: 1) { u.maxRecords = Int(n) }
        if let v = t["max_bytes"], let n = integer(v, "upload.max_bytes", min: 1024) { u.maxBytes = Int(n) }
        if let v = t["linger_ms"], let n = integer(v, "upload.linger_ms", min: 0) { u.lingerMilliseconds = Int(n) }
        if let v = t["retry_base_ms"], let n = integer(v, "upload.retry_base_ms", min: 1) {
            u.backoff.baseSeconds = Double(n) / 1000
        }
        if let v = t["retry_cap_ms"], let n = integer(v, "upload.retry_cap_ms", min: 1) {
            u.backoff.capSeconds = Double(n) / 1000
        }
        if let v = t["max_retries"], let n = integer(v, "upload.max_retries", min: 0) { u.maxRetries = Int(n) }
        if let v = t["shutdown_timeout_ms"], let n = integer(v, "upload.shutdown_timeout_ms", min: 0) {
            u.shutdownTimeoutMilliseconds = Int(n)
        }
        if let v = t["hold_ms"], let n = integer(v, "upload.hold_ms", min: 10) { u.holdMilliseconds = Int(n) }
        if let v = t["client_id"], let id = string(v, "upload.client_id") { u.clientID = id }
        return u
    }
}
