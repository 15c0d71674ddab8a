import EdgeIngestCore
import IngestGateway

/// `[[inputs]]`: stdin, followed files, serial ports, HTTP, the socket and MQTT
/// (``InputSettings`` and ``GatewaySettings`` hold the defaults).
extension ConfigurationDecoder {
    static let inputKeys = Set([
        "kind", "name", "format", "type", "paths", "device", "baud", "delimiter", "max_line_bytes", "poll_interval_ms",
        "socket", "socket_group",
        "start_at_end",
    ])
    .union(httpInputKeys).union(mqttInputKeys)
    /// The one message for mistakes common enough to deserve one.
    static let inputHints = [
        "path":
            "not a key: a file input takes paths, a list of paths or globs (paths = [\"/var/log/sensors/*.ndjson\"]); a serial input takes device"
    ]
    /// Keys only an HTTP input takes.
    static let httpInputKeys: Set<String> = [
        "listen", "app_id", "max_body_bytes", "max_connections", "request_timeout_ms", "idle_timeout_ms",
        "max_connections_per_address", "head_timeout_ms", "min_body_bytes_per_second", "worker_threads",
        "dedup_window_s", "anonymous",
        "api_keys_file", "users_file", "owner_field", "shared_id_space",
        "quota_records_per_second", "quota_bytes_per_second", "quota_burst_s",
        "tls_certificate", "tls_key", "tls_client_ca",
    ]

    mutating func decodeInputs(
        _ value: TOMLValue?,
        types: [RecordType],
        environment: [String: String] = [:]
    ) -> [InputSettings] {
        var inputs: [InputSettings] = []
        var names = Set<String>()
        for (key, t, item) in arrayOfTables(value, "inputs", known: Self.inputKeys, hints: Self.inputHints) {
            guard let kindName = string(t["kind"], key + ".kind") else {
                problem(item, key + ".kind", "is required: stdin, file, serial, http, socket or mqtt")
                continue
            }
            guard let kind = InputSettings.Kind(rawValue: kindName) else {
                notOneOf(
                    t["kind"],
                    key + ".kind",
                    kindName,
                    "must be stdin, file, serial, http, socket or mqtt",
                    choices: ["stdin", "file", "serial", "http", "socket", "mqtt"]
                )
                continue
            }
            var input = InputSettings(kind: kind, name: kindName)
            if let f = t["format"], let name = string(f, key + ".format") {
                if let format = InputSettings.Format(rawValue: name) {
                    input.format = format
                } else {
                    notOneOf(f, key + ".format", name, "must be ndjson or csv", choices: ["ndjson", "csv"])
                }
            }
            if let v = t["type"], let name = string(v, key + ".type") {
                if types.contains(where: { $0.name == name }) || types.isEmpty {
                    input.type = name
                } else {
                    problem(
                        v,
                        key + ".type",
                        "names no declared type: declare [types.\(name)] or use one of \(types.map(\.name).joined(separator: ", "))"
                    )
                }
            } else if types.count == 1 {
                input.type = types[0].name
            }
            switch kind {
            case .stdin:
                break
            case .file:
                if let p = t["paths"] { input.paths = strings(p, key + ".paths") }
                if input.paths.isEmpty, t["path"] == nil {  // `path` has its own message
                    problem(t["paths"] ?? item, key + ".paths", "a file input needs at least one path or glob")
                }
                input.name = "file:" + input.paths.joined(separator: ",")
            case .serial:
                input.device = string(t["device"], key + ".device")
                if input.device == nil {
                    problem(item, key + ".device", "a serial input needs its device, e.g. \"/dev/ttyUSB0\"")
                }
                input.name = "serial:" + (input.device ?? "?")
            case .socket:
                input.socket = string(t["socket"], key + ".socket")
                input.socketGroup = string(t["socket_group"], key + ".socket_group")
                input.name = "socket:" + (input.socket ?? "ingestd.sock")
            case .mqtt:
                input.mqtt = decodeMQTTInput(t, key: key, item: item, types: types, environment: environment)
                input.name = "mqtt:" + (input.mqtt?.subscriptions.joined(separator: ",") ?? "?")
            case .http:
                input.http = decodeHTTPInput(t, key: key, item: item, types: types)
                input.name = "http:" + (input.http?.listen ?? "?")
                if input.format != .ndjson {
                    problem(t["format"], key + ".format", "an http input reads NDJSON batches (docs/PROTOCOL.md)")
                }
            }
            if kind != .http {
                let shared = kind == .mqtt ? Self.mqttInputKeys : []
                for name in Self.httpInputKeys.subtracting(shared).sorted() where t[name] != nil {
                    problem(t[name], key + "." + name, "applies only to an http input (kind = \"http\")")
                }
            }
            if kind != .mqtt {
                let shared = kind == .http ? Self.httpInputKeys : []
                for name in Self.mqttInputKeys.subtracting(shared).sorted() where t[name] != nil {
                    problem(t[name], key + "." + name, "applies only to an mqtt input (kind = \"mqtt\")")
                }
            }
            if kind != .socket {
                for name in ["socket", "socket_group"] where t[name] != nil {
                    problem(t[name], key + "." + name, "applies only to a socket input (kind = \"socket\")")
                }
            }
            if let v = t["baud"], let n = integer(v, key + ".baud", min: 50) {
                if SerialSpeed.isSupported(Int(n)) {
                    input.baud = Int(n)
                } else {
                    problem(
                        v,
                        key + ".baud",
                        "unsupported baud rate \(n): use one of \(SerialSpeed.supported.map(String.init).joined(separator: ", "))"
                    )
                }
            }
            if let v = t["delimiter"], let d = string(v, key + ".delimiter") {
                if d.utf8.count == 1 {
                    input.delimiter = d.utf8.first!
                } else {
                    problem(v, key + ".delimiter", "must be a single byte, e.g. \"\\n\" or \";\"")
                }
            }
            if let v = t["max_line_bytes"], let n = integer(v, key + ".max_line_bytes", min: 64) {
                input.maxLineBytes = Int(n)
            }
            if let v = t["poll_interval_ms"], let n = integer(v, key + ".poll_interval_ms", min: 10) {
                input.pollIntervalMilliseconds = Int(n)
            }
            if let v = t["start_at_end"], let b = bool(v, key + ".start_at_end") { input.startAtEnd = b }
            if let v = t["name"], let name = string(v, key + ".name") { input.name = name }
            if !names.insert(input.name).inserted {
                problem(item, key + ".name", "two inputs are named \"\(input.name)\": give each a distinct name")
            }
            if let mqtt = input.mqtt,
                let other = inputs.first(where: {
                    $0.mqtt.map { ($0.host, $0.port, $0.clientID) == (mqtt.host, mqtt.port, mqtt.clientID) } ?? false
                })
            {
                problem(
                    t["client_id"] ?? item,
                    key + ".client_id",
                    "\"\(mqtt.clientID.prefix(60))\" is input '\(other.name)'s client id on the same broker too: give each mqtt input its own client_id (a broker keeps one session per client id, and a second connection takes it over)"
                )
            }
            if let field = input.http?.ownerField,
                let other = inputs.first(where: { ($0.http?.ownerField).map { $0 != field } ?? false })
            {
                problem(
                    t["owner_field"],
                    key + ".owner_field",
                    "differs from input '\(other.name)'s: one queue and one archive, so one owner field for every http input"
                )
            }
            if kind == .stdin, inputs.contains(where: { $0.kind == .stdin }) {
                problem(item, key + ".kind", "only one input can read stdin")
            }
            inputs.append(input)
        }
        return inputs
    }

    mutating func decodeHTTPInput(
        _ t: TOMLTable,
        key: String,
        item: TOMLValue,
        types: [RecordType] = []
    ) -> GatewaySettings? {
        guard let listen = string(t["listen"], key + ".listen") else {
            problem(
                item,
                key + ".listen",
                "an http input needs the address to listen on, e.g. \"127.0.0.1:8480\" or \"0.0.0.0:8480\""
            )
            return nil
        }
        var http = GatewaySettings(listen: listen)
        if (try? HTTPServer.split(listen)) == nil {
            problem(
                t["listen"],
                key + ".listen",
                "must be \"host:port\", e.g. \"127.0.0.1:8480\", \"0.0.0.0:8480\" or \"[::]:8480\""
            )
        }
        if let v = t["app_id"] { http.appID = string(v, key + ".app_id") }
        if let v = t["max_body_bytes"], let n = integer(v, key + ".max_body_bytes", min: 1024) {
            http.limits.maxBodyBytes = Int(n)
        }
        if let v = t["max_connections"], let n = integer(v, key + ".max_connections", min: 1) {
            http.maxConnections = Int(n)
        }
        if let v = t["max_connections_per_address"], let n = integer(v, key + ".max_connections_per_address", min: 1) {
            http.maxConnectionsPerAddress = Int(n)
        }
        if let v = t["worker_threads"], let n = integer(v, key + ".worker_threads", min: 1) {
            if n > 1024 {
                problem(v, key + ".worker_threads", "must be at most 1024, got \(n)")
            } else {
                http.workerThreads = Int(n)
            }
        }
        if let v = t["request_timeout_ms"], let n = integer(v, key + ".request_timeout_ms", min: 100) {
            http.limits.requestTimeoutMilliseconds = Int(n)
        }
        if let v = t["head_timeout_ms"], let n = integer(v, key + ".head_timeout_ms", min: 100) {
            http.limits.headTimeoutMilliseconds = Int(n)
        }
        if let v = t["min_body_bytes_per_second"], let n = integer(v, key + ".min_body_bytes_per_second", min: 0) {
            http.limits.minBodyBytesPerSecond = Int(n)
        }
        if let v = t["idle_timeout_ms"], let n = integer(v, key + ".idle_timeout_ms", min: 100) {
            http.limits.idleTimeoutMilliseconds = Int(n)
        }
        if let v = t["dedup_window_s"], let n = integer(v, key + ".dedup_window_s", min: 0) {
            http.dedupWindowSeconds = n
        }
        if let v = t["anonymous"], let b = bool(v, key + ".anonymous") { http.anonymous = b }
        if let v = t["api_keys_file"] { http.apiKeysFile = string(v, key + ".api_keys_file") }
        if let v = t["users_file"] { http.usersFile = string(v, key + ".users_file") }
        if let v = t["shared_id_space"], let b = bool(v, key + ".shared_id_space") { http.sharedIDSpace = b }
        if let v = t["quota_records_per_second"], let n = integer(v, key + ".quota_records_per_second", min: 1) {
            http.quotaRecordsPerSecond = Int(n)
        }
        if let v = t["quota_bytes_per_second"], let n = integer(v, key + ".quota_bytes_per_second", min: 1024) {
            http.quotaBytesPerSecond = Int(n)
        }
        if let v = t["quota_burst_s"], let n = integer(v, key + ".quota_burst_s", min: 1) {
            http.quotaBurstSeconds = Int(n)
        }
        if let v = t["tls_certificate"] { http.tlsCertificateFile = string(v, key + ".tls_certificate") }
        if let v = t["tls_key"] { http.tlsKeyFile = string(v, key + ".tls_key") }
        if let v = t["tls_client_ca"] { http.tlsClientCAFile = string(v, key + ".tls_client_ca") }
        if (http.tlsCertificateFile == nil) != (http.tlsKeyFile == nil) {
            problem(
                t["tls_certificate"] ?? t["tls_key"],
                key + (http.tlsCertificateFile == nil ? ".tls_certificate" : ".tls_key"),
                "TLS needs both tls_certificate and tls_key (PEM files)"
            )
        }
        if http.tlsClientCAFile != nil, http.tlsCertificateFile == nil {
            problem(
                t["tls_client_ca"],
                key + ".tls_client_ca",
                "needs tls_certificate and tls_key: mutual TLS is TLS first"
            )
        }
        if let v = t["owner_field"], let name = string(v, key + ".owner_field") {
            http.ownerField = name
            // Every type a batch may name must have it, as a string.
            for type in types where type.fields.first(where: { $0.name == name })?.type.kind != .string {
                problem(
                    v,
                    key + ".owner_field",
                    "names \(quoted(name)), which [types.\(type.name)] does not declare as a string field: add \(name) = \"string?\" to it (the sender's account id is written there)"
                )
            }
        }
        return http
    }
}
