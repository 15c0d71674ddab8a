import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// `sink = "jetstream"`: publishes each record into a NATS JetStream
/// stream with `Nats-Msg-Id: <_id>`, so the stream drops re-sends (exactly
/// once within its duplicate window), deleting records only after their
/// PubAck.
///
/// ```toml
/// [upload]
/// sink = "jetstream"
/// urls = ["nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"]
/// stream = "TELEMETRY"
/// subject = "telemetry.{client_id}.{type}"
/// create_stream = true          # with stream_replicas and duplicate_window_s
/// stream_replicas = 3
/// credentials_file = "/etc/ingestd/edge.creds"
/// ```
struct JetStreamSinkConfiguration: SinkConfiguration {
    static let name = "jetstream"
    static let ownKeys: Set<String> = [
        "urls", "stream", "subject", "create_stream", "stream_replicas", "stream_subjects", "duplicate_window_s",
        "username", "password_file", "credentials_file", "nkey_seed_file", "max_pending",
    ]
    static let isOverHTTP = false
    static let httpKeysRead: Set<String> = [
        "url", "ca_file", "client_certificate", "client_key", "connect_timeout_ms", "timeout_ms", "token_file",
    ]
    static let withoutHTTP =
        "publishes over NATS (servers: url or urls; TLS: tls:// with ca_file, client_certificate, client_key)"

    let settings: JetStreamSettings
    /// Whether `upload.client_id` names the connection (else the host name).
    var clientIDIsSet = false

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        let servers = decodeServers(upload, &decoder)
        guard !servers.isEmpty else { return nil }
        guard
            let streamName = decoder.requiredString(
                upload,
                "stream",
                sink: name,
                what: "the JetStream stream's name, e.g. \"TELEMETRY\""
            )
        else { return nil }
        guard !streamName.isEmpty,
            streamName.utf8.allSatisfy({
                $0 > 0x20 && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: ">") && $0 < 0x7F
            })
        else {
            decoder.problem(upload["stream"], "upload.stream", "must be a stream name without spaces, '.', '*' or '>'")
            return nil
        }
        let subjectText = decoder.string(upload["subject"], "upload.subject") ?? "ingestd.{client_id}.{type}"
        let subject: SubjectTemplate
        do {
            subject = try SubjectTemplate(subjectText, for: .nats)
        } catch {
            decoder.problem(upload["subject"], "upload.subject", "\(error.message), got \"\(subjectText.prefix(60))\"")
            return nil
        }
        var settings = JetStreamSettings(servers: servers, stream: streamName, subject: subject, clientID: hostName())
        if servers.contains(where: \.tls) || upload["ca_file"] != nil || upload["client_certificate"] != nil {
            settings.tls = StreamConnection.TLSFiles(
                caFile: decoder.string(upload["ca_file"], "upload.ca_file"),
                certificateFile: decoder.string(upload["client_certificate"], "upload.client_certificate"),
                keyFile: decoder.string(upload["client_key"], "upload.client_key")
            )
        }
        if let v = upload["create_stream"], decoder.bool(v, "upload.create_stream") == true {
            var creation = JetStreamSettings.StreamCreation(replicas: 1, duplicateWindowSeconds: 600)
            if let v = upload["stream_replicas"], let n = decoder.integer(v, "upload.stream_replicas", min: 1) {
                guard n <= 5 else {
                    decoder.problem(v, "upload.stream_replicas", "must be 1 to 5 (JetStream's limit)")
                    return nil
                }
                creation.replicas = Int(n)
            }
            if let v = upload["duplicate_window_s"], let n = decoder.integer(v, "upload.duplicate_window_s", min: 1) {
                creation.duplicateWindowSeconds = Int(min(n, 7 * 86_400))
            }
            if let v = upload["stream_subjects"] { creation.subjects = decoder.strings(v, "upload.stream_subjects") }
            if creation.subjects.isEmpty, JetStreamSettings.createdSubjects(for: subject) == [">"] {
                decoder.problem(
                    upload["subject"],
                    "upload.subject",
                    "starts with a placeholder, so the stream to create would take every subject: set upload.stream_subjects"
                )
            }
            settings.createStream = creation
        } else {
            for key in ["stream_replicas", "duplicate_window_s", "stream_subjects"] where upload[key] != nil {
                decoder.problem(upload[key], "upload.\(key)", "applies only with create_stream = true")
            }
        }
        if let v = upload["max_pending"], let n = decoder.integer(v, "upload.max_pending", min: 1) {
            settings.maxPending = Int(min(n, 65_536))
        }
        if let v = upload["connect_timeout_ms"], let n = decoder.integer(v, "upload.connect_timeout_ms", min: 1) {
            settings.connectTimeoutMilliseconds = Int(min(n, 3_600_000))
        }
        if let v = upload["timeout_ms"], let n = decoder.integer(v, "upload.timeout_ms", min: 1) {
            settings.timeoutMilliseconds = Int(min(n, 3_600_000))
        }
        guard let credentials = decodeCredentials(upload, &decoder, environment: environment) else { return nil }
        settings.credentials = credentials
        return Self(settings: settings, clientIDIsSet: upload["client_id"] != nil)
    }

    /// `url` (one server) or `urls` (a cluster's members, tried in order).
    private static func decodeServers(_ upload: TOMLTable, _ decoder: inout ConfigurationDecoder) -> [NATSServerAddress]
    {
        if upload["url"] != nil, upload["urls"] != nil {
            decoder.problem(
                upload["urls"],
                "upload.urls",
                "and upload.url both name servers: keep one (urls for a cluster)"
            )
            return []
        }
        let key = upload["urls"] != nil ? "urls" : "url"
        let texts: [String]
        if let v = upload["urls"] {
            texts = decoder.strings(v, "upload.urls")
        } else {
            texts =
                decoder.requiredString(
                    upload,
                    "url",
                    sink: name,
                    what: "the NATS server, e.g. \"nats://127.0.0.1:4222\" (or urls for a cluster)"
                ).map { [$0] } ?? []
        }
        if upload[key] != nil, texts.isEmpty, key == "urls" {
            decoder.problem(
                upload[key],
                "upload.urls",
                "is empty: list the cluster's servers, e.g. [\"nats://nats-1:4222\"]"
            )
        }
        var servers: [NATSServerAddress] = []
        for text in texts {
            switch NATSServerAddress.parse(text) {
            case .success(let server): servers.append(server)
            case .failure(let problem):
                decoder.problem(
                    upload[key],
                    "upload.\(key)",
                    "\(problem.message), got \"\(redactedURL(text).prefix(60))\""
                )
                return []
            }
        }
        return servers
    }

    /// At most one way to log in: user and password, a token, an NKey seed, or a credentials file.
    private static func decodeCredentials(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> NATSCredentials? {
        var credentials = NATSCredentials()
        credentials.username = decoder.string(upload["username"], "upload.username")
        credentials.password = decoder.secret(
            upload["password_file"],
            "upload.password_file",
            credential: "nats-password",
            environment: environment,
            required: false
        )
        credentials.token = decoder.secret(
            upload["token_file"],
            "upload.token_file",
            credential: "nats-token",
            environment: environment,
            required: false
        )
        if let seed = decoder.secret(
            upload["nkey_seed_file"],
            "upload.nkey_seed_file",
            credential: "nats-nkey",
            environment: environment,
            required: false
        ) {
            do {
                credentials.nkey = try NATSNKey(seed: seed)
            } catch {
                decoder.problem(upload["nkey_seed_file"], "upload.nkey_seed_file", error.message)
                return nil
            }
        }
        var credentialsPath = decoder.string(upload["credentials_file"], "upload.credentials_file")
        if credentialsPath == nil, let directory = environment["CREDENTIALS_DIRECTORY"],
            access(directory + "/nats-credentials", F_OK) == 0
        {
            credentialsPath = directory + "/nats-credentials"
        }
        if let path = credentialsPath {
            do {
                let file = try NATSCredentials.fromCredentialsFile(readSmallTextFile(path, limit: 64 * 1024))
                credentials.nkey = file.nkey
                credentials.jwt = file.jwt
            } catch let error as JetStreamError {
                decoder.problem(upload["credentials_file"], "upload.credentials_file", "'\(path)' \(error.message)")
                return nil
            } catch {
                decoder.problem(
                    upload["credentials_file"],
                    "upload.credentials_file",
                    "'\(path)' cannot be read: \(error)"
                )
                return nil
            }
        }
        if credentials.password != nil, credentials.username == nil {
            decoder.problem(upload["password_file"], "upload.password_file", "needs upload.username too")
        }
        let ways = [
            credentials.username != nil, credentials.token != nil, upload["nkey_seed_file"] != nil,
            credentialsPath != nil,
        ].filter { $0 }.count
        if ways > 1 {
            decoder.problem(
                nil,
                "upload",
                "names more than one NATS login: keep one of username/password_file, token_file, nkey_seed_file and credentials_file"
            )
            return nil
        }
        return credentials
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        let login: String
        if settings.credentials.jwt != nil {
            login = "credentials file"
        } else if settings.credentials.nkey != nil {
            login = "NKey"
        } else if settings.credentials.token != nil {
            login = "token"
        } else if let user = settings.credentials.username {
            login = "user \(user)"
        } else {
            login = "none"
        }
        let creation = settings.createStream.map {
            ", created if missing (R\($0.replicas), duplicate window \($0.duplicateWindowSeconds) s)"
        }
        return
            "\(settings)\(creation ?? " (must exist)"), subject \(settings.subject.text), Nats-Msg-Id = _id, login \(login), \(upload.maxRecords) records per batch, at most \(settings.maxPending) unacknowledged"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        var settings = settings
        if clientIDIsSet { settings.clientID = upload.clientID }
        // A lost PubAck is re-sent after at most the retry cap plus the wait for it.
        settings.resendWithinSeconds =
            Int(upload.backoff.capSeconds.rounded(.up))
            + (settings.connectTimeoutMilliseconds + settings.timeoutMilliseconds + 999) / 1000
        return { [settings] in JetStreamSink(settings: settings) }
    }
}
