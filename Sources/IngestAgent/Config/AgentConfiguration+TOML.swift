import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

extension AgentConfiguration {
    /// Reads and checks a configuration file. Every problem is collected,
    /// so `check-config` can report them all at once.
    ///
    /// - Throws: ``ConfigurationError`` listing each problem with its line and key.
    public static func load(path: String, environment: [String: String]) throws -> AgentConfiguration {
        guard let text = readTextFile(path) else {
            throw ConfigurationError(
                path: path,
                problems: [ConfigurationProblem(line: nil, key: "", message: "cannot be read: \(String(cString: strerror(errno)))")]
            )
        }
        return try parse(text, path: path, environment: environment)
    }

    /// Parses configuration text; `path` names it in errors.
    public static func parse(_ text: String, path: String, environment: [String: String]) throws -> AgentConfiguration {
        let root: TOMLTable
        do {
            root = try TOMLDocument.parse(text)
        } catch let error as TOMLError {
            throw ConfigurationError(path: path, problems: [ConfigurationProblem(line: error.line, key: "", message: error.message)])
        }
        var decoder = ConfigurationDecoder()
        let configuration = decoder.decode(root, environment: environment)
        guard decoder.problems.isEmpty, let configuration else {
            throw ConfigurationError(path: path, problems: decoder.problems)
        }
        return configuration
    }
}


/// Turns a TOML table into an ``AgentConfiguration``, collecting problems.
struct ConfigurationDecoder {
    var problems: [ConfigurationProblem] = []

    /// Every key each section accepts: the single list that decoding checks
    /// against and that a test holds etc/ingestd.toml to.
    static let agentKeys: Set<String> = ["state_directory", "rejects_file", "log_target", "log_level", "stats_interval_seconds", "status_interval_ms"]
    static let queueKeys: Set<String> = [
        "path", "max_bytes", "max_records", "overflow_policy", "durability", "schema_version", "commit_max_records", "commit_interval_ms",
        "encryption_key_file",
    ]
    static let inputKeys = Set(["kind", "name", "format", "type", "paths", "device", "baud", "delimiter", "max_line_bytes", "poll_interval_ms", "start_at_end"])
        .union(httpInputKeys)
    /// Keys only an HTTP input takes.
    static let httpInputKeys: Set<String> = [
        "listen", "app_id", "max_body_bytes", "max_connections", "request_timeout_ms", "idle_timeout_ms", "dedup_window_s", "anonymous",
        "api_keys_file", "users_file",
    ]
    /// Every sink's batching and retry keys, plus the keys SinkSettings
    /// lists per kind of sink (one list to extend for a new sink key).
    static let uploadKeys: Set<String> = Set([
        "max_records", "max_bytes", "linger_ms", "retry_base_ms", "retry_cap_ms", "max_retries", "shutdown_timeout_ms", "hold_ms",
        "client_id", "sink",
    ]).union(SinkSettings.httpKeys).union(SinkSettings.postgresKeys).union(SinkSettings.sinkOnlyKeys.keys)

    mutating func problem(_ value: TOMLValue?, _ key: String, _ message: String) {
        problems.append(ConfigurationProblem(line: value?.line, key: key, message: message))
    }

    mutating func decode(_ root: TOMLTable, environment: [String: String]) -> AgentConfiguration? {
        rejectUnknown(root, known: ["agent", "queue", "types", "inputs", "upload", "auth", "client_reset", "migrations"], prefix: "")
        let agent = table(root["agent"], "agent")
        let queue = table(root["queue"], "queue")
        rejectUnknown(agent, known: Self.agentKeys, prefix: "agent.")
        rejectUnknown(queue, known: Self.queueKeys, prefix: "queue.")

        let types = decodeTypes(root["types"])
        let stateDirectory = string(agent?["state_directory"], "agent.state_directory")
            ?? AgentConfiguration.defaultStateDirectory(environment: environment)
        var inputs = decodeInputs(root["inputs"], types: types)
        if root["inputs"] == nil {
            var stdin = InputSettings(kind: .stdin, name: "stdin")
            stdin.type = types.count == 1 ? types[0].name : nil
            inputs = [stdin]
        }
        var c = AgentConfiguration(stateDirectory: stateDirectory, types: types, inputs: inputs)
        c.queuePath = string(queue?["path"], "queue.path")
        if let v = queue?["max_bytes"] { c.maxBytes = integer(v, "queue.max_bytes", min: 1024) }
        if let v = queue?["max_records"] { c.maxRecords = integer(v, "queue.max_records", min: 1) }
        if let v = queue?["overflow_policy"], let name = string(v, "queue.overflow_policy") {
            if let policy = OverflowPolicy(name: name) { c.overflowPolicy = policy }
            else { problem(v, "queue.overflow_policy", "must be one of block, drop_newest, drop_oldest, got \"\(name)\"") }
        }
        if let v = queue?["durability"], let name = string(v, "queue.durability") {
            if let durability = Durability(name: name) { c.durability = durability }
            else { problem(v, "queue.durability", "must be power_loss_safe or crash_safe, got \"\(name)\"") }
        }
        if let v = queue?["schema_version"], let n = integer(v, "queue.schema_version", min: 0) { c.schemaVersion = n }
        if let v = queue?["commit_max_records"], let n = integer(v, "queue.commit_max_records", min: 1) { c.commitMaxRecords = Int(n) }
        if let v = queue?["commit_interval_ms"], let n = integer(v, "queue.commit_interval_ms", min: 1) { c.commitIntervalMilliseconds = Int(n) }
        c.encryptionKey = encryptionKey(queue?["encryption_key_file"], environment: environment)
        c.rejectsFile = string(agent?["rejects_file"], "agent.rejects_file").flatMap { $0.isEmpty ? nil : $0 }
        if let v = agent?["log_target"], let name = string(v, "agent.log_target") {
            if let target = AgentConfiguration.LogTarget(rawValue: name) { c.logTarget = target }
            else { problem(v, "agent.log_target", "must be auto, journal or stderr, got \"\(name)\"") }
        }
        if let v = agent?["log_level"], let name = string(v, "agent.log_level") {
            if ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(name) { c.logLevel = name }
            else { problem(v, "agent.log_level", "must be one of trace, debug, info, notice, warning, error, critical, got \"\(name)\"") }
        }
        if let v = agent?["stats_interval_seconds"], let n = integer(v, "agent.stats_interval_seconds", min: 0) { c.statsIntervalSeconds = Int(n) }
        if let v = agent?["status_interval_ms"], let n = integer(v, "agent.status_interval_ms", min: 10) { c.statusIntervalMilliseconds = Int(n) }
        if let (upload, sink) = decodeUpload(table(root["upload"], "upload"), environment: environment) {
            c.upload = upload
            c.sink = sink
        }
        c.auth = decodeAuth(table(root["auth"], "auth"), environment: environment)
        c.clientReset = decodeClientReset(table(root["client_reset"], "client_reset"))
        c.migrations = decodeMigrations(root["migrations"], schemaVersion: c.schemaVersion)
        if case .lineProtocol(_, let tags, let timestamp) = c.sink, let upload = table(root["upload"], "upload") {
            for tag in tags where !c.types.contains(where: { $0.fields.contains { $0.name == tag } }) {
                problem(upload["tags"], "upload.tags", "names '\(tag.prefix(40))', which no record type under [types] declares")
            }
            if let timestamp, !c.types.contains(where: { $0.fields.contains { $0.name == timestamp && $0.type == .timestamp } }) {
                problem(upload["timestamp"], "upload.timestamp", "must name a field of type timestamp under [types], got '\(timestamp.prefix(40))'")
            }
            if c.upload?.http.url.contains("precision=") == true {
                problem(upload["url"], "upload.url", "must not set precision=: the influxdb sink sends nanoseconds and adds precision=ns itself")
            }
        }
        if c.auth != nil, c.upload == nil {
            problem(root["auth"], "auth", "needs an [upload] section: logging in is only for uploading")
        }
        if c.auth != nil, c.upload != nil, c.sink != .ingestProtocol {
            problem(root["auth"], "auth", "only applies to sink = \"ingest\": a local sink needs no login")
        }
        if c.auth != nil, c.upload?.http.bearerToken != nil {
            problem(root["auth"], "auth", "and upload.token_file (or the upload-token credential) both give credentials: keep one")
        }
        if types.isEmpty && problems.isEmpty {
            problem(root["types"], "types", "declare at least one record type, e.g. [types.WeatherSensor] with one 'field = \"type\"' line per field")
        }
        return c
    }

    // MARK: Types

    mutating func decodeTypes(_ value: TOMLValue?) -> [RecordType] {
        guard let value else { return [] }
        guard case .table(let table) = value.kind else {
            problem(value, "types", "must be a table of record types ([types.NAME])")
            return []
        }
        var types: [RecordType] = []
        for entry in table.entries {
            let key = "types.\(entry.key)"
            guard case .table(let fieldsTable) = entry.value.kind else {
                problem(entry.value, key, "must be a table of fields: [\(key)] then one 'field = \"type\"' line per field")
                continue
            }
            var fields: [RecordType.Field] = []
            for field in fieldsTable.entries {
                if let f = decodeField(field.key, field.value, key: "\(key).\(field.key)") { fields.append(f) }
            }
            do {
                types.append(try RecordType(name: entry.key, fields: fields))
            } catch let error as EdgeIngestError {
                problem(entry.value, key, error.message)
            } catch {
                problem(entry.value, key, "\(error)")
            }
        }
        return types
    }

    /// `field = "int"`, `field = "string?"` (optional), or
    /// `field = { type = "string", required = false, default = "C" }`.
    mutating func decodeField(_ name: String, _ value: TOMLValue, key: String) -> RecordType.Field? {
        let typeNames = "string, int, double, bool, timestamp or objectId"
        switch value.kind {
        case .string(var spec):
            var required = true
            if spec.hasSuffix("?") {
                required = false
                spec.removeLast()
            }
            guard let type = FieldType(name: spec) else {
                problem(value, key, "unknown field type \"\(spec)\": use \(typeNames) (add '?' for optional)")
                return nil
            }
            return RecordType.Field(name: name, type: type, isRequired: required)
        case .table(let t):
            rejectUnknown(t, known: ["type", "required", "default"], prefix: key + ".", line: value.line)
            guard let typeName = string(t["type"], key + ".type") else {
                problem(value, key + ".type", "is required: one of \(typeNames)")
                return nil
            }
            guard let type = FieldType(name: typeName) else {
                problem(t["type"], key + ".type", "unknown field type \"\(typeName)\": use \(typeNames)")
                return nil
            }
            var field = RecordType.Field(name: name, type: type)
            if let r = t["required"] { field.isRequired = bool(r, key + ".required") ?? true }
            if let d = t["default"] { field.defaultValue = defaultValue(d, type: type, key: key + ".default") }
            return field
        default:
            problem(value, key, "must be a type name (\"int\") or a table ({ type = \"int\", default = 0 }), got \(value.typeName)")
            return nil
        }
    }

    mutating func defaultValue(_ value: TOMLValue, type: FieldType, key: String) -> FieldValue? {
        let raw: RawFieldValue
        switch value.kind {
        case .string(let s): raw = .string(s)
        case .integer(let n): raw = .int(n)
        case .float(let d): raw = .double(d)
        case .bool(let b): raw = .bool(b)
        default:
            problem(value, key, "must be a \(type) value, got \(value.typeName)")
            return nil
        }
        do {
            let probe = try RecordType(name: "Default", fields: [.init(name: "value", type: type)])
            return try probe.validate(["value": raw])["value"]
        } catch let error as EdgeIngestError {
            problem(value, key, error.message.replacingField("value", with: key))
            return nil
        } catch {
            return nil
        }
    }

    // MARK: Upload

    mutating func decodeUpload(_ t: TOMLTable?, environment: [String: String]) -> (UploadSettings, SinkSettings)? {
        guard let t else { return nil }
        rejectUnknown(t, known: Self.uploadKeys, prefix: "upload.")
        guard let sink = decodeSink(t, environment: environment) else { return nil }
        switch sink {
        case .sqliteArchive, .postgreSQL:
            // Batching, retries and shutdown apply to every sink; the
            // HTTP settings stay empty (the uploader does not read them).
            return (decodeBatching(t, into: UploadSettings(http: HTTPSettings(url: ""), clientID: hostName())), sink)
        case .ingestProtocol, .clickHouse, .lineProtocol:
            break
        }
        guard let url = string(t["url"], "upload.url") else {
            problem(nil, "upload.url", "is required in [upload]: the backend's ingest endpoint, e.g. \"https://backend.example/ingest/v1/batches\"")
            return nil
        }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            problem(t["url"], "upload.url", "must start with http:// or https://, got \"\(redactedURL(url).prefix(40))\"")
            return nil
        }
        var http = HTTPSettings(url: url)
        if let v = t["gzip"], let b = bool(v, "upload.gzip") { http.gzip = b }
        if let v = t["connect_timeout_ms"], let n = integer(v, "upload.connect_timeout_ms", min: 1) { http.connectTimeoutMilliseconds = Int(n) }
        if let v = t["timeout_ms"], let n = integer(v, "upload.timeout_ms", min: 1) { http.timeoutMilliseconds = Int(n) }
        http.caFile = string(t["ca_file"], "upload.ca_file")
        http.caPath = string(t["ca_path"], "upload.ca_path")
        http.clientCertificate = string(t["client_certificate"], "upload.client_certificate")
        http.clientKey = string(t["client_key"], "upload.client_key")
        http.proxy = string(t["proxy"], "upload.proxy")
        if let v = t["headers"] {
            if case .table(let headers) = v.kind {
                for entry in headers.entries {
                    if let value = string(entry.value, "upload.headers.\(entry.key)") { http.headers[entry.key] = value }
                }
            } else {
                problem(v, "upload.headers", "must be a table of header names to values, e.g. { \"X-Site\" = \"north\" }")
            }
        }
        // The token: a file (mode 0600 or a systemd credential), never the config itself.
        http.bearerToken = secret(t["token_file"], "upload.token_file", credential: "upload-token", environment: environment, required: false)
        return (decodeBatching(t, into: UploadSettings(http: http, clientID: hostName())), sink)
    }

    /// `upload.sink` and what it needs; nil after a problem. HTTP-only keys
    /// next to another sink are problems: they would silently do nothing.
    mutating func decodeSink(_ t: TOMLTable, environment: [String: String]) -> SinkSettings? {
        let name = t["sink"].flatMap { string($0, "upload.sink") } ?? "ingest"
        for (key, owners) in SinkSettings.sinkOnlyKeys.sorted(by: { $0.key < $1.key }) where !owners.contains(name) && t[key] != nil {
            let sinks = owners.map { "\"\($0)\"" }.joined(separator: " or ")
            problem(t[key], "upload.\(key)", "is for sink = \(sinks); this [upload] has sink = \"\(name)\"")
        }
        switch name {
        case "ingest":
            return .ingestProtocol
        case "clickhouse":
            let database = identifier(t["database"], "upload.database")
            let table = identifier(t["table"], "upload.table")
            let token = t["deduplication_token"].flatMap { bool($0, "upload.deduplication_token") } ?? true
            return .clickHouse(database: database, table: table, deduplicationToken: token)
        case "influxdb":
            let measurement = t["measurement"].flatMap { string($0, "upload.measurement") }
            if let measurement, measurement.isEmpty || measurement.hasPrefix("_") || measurement.contains(where: \.isNewline) {
                problem(t["measurement"], "upload.measurement", "must be a name not starting with _ and without newlines, got \"\(measurement.prefix(40))\"")
            }
            let tags = t["tags"].map { strings($0, "upload.tags") } ?? []
            let timestamp = t["timestamp"].flatMap { string($0, "upload.timestamp") }
            return .lineProtocol(measurement: measurement, tags: tags, timestamp: timestamp)
        case "sqlite":
            refuseHTTPKeys(t, sink: "sqlite", keeping: [], because: "writes to upload.path")
            guard let path = string(t["path"], "upload.path"), !path.isEmpty else {
                problem(t["sink"], "upload.path", "is required with sink = \"sqlite\": the archive file, e.g. \"/var/lib/ingestd/archive.sqlite\"")
                return nil
            }
            return .sqliteArchive(path: path)
        case "postgresql":
            return decodePostgres(t, environment: environment)
        default:
            problem(t["sink"], "upload.sink", "must be one of \(SinkSettings.names.joined(separator: ", ")), got \"\(name.prefix(40))\"")
            return nil
        }
    }

    /// Refuses the HTTP sinks' keys (but `keeping`) under a sink that is not HTTP.
    mutating func refuseHTTPKeys(_ t: TOMLTable, sink: String, keeping: Set<String>, because how: String) {
        for key in SinkSettings.httpKeys.subtracting(keeping).sorted() where t[key] != nil {
            problem(t[key], "upload.\(key)", "only applies to HTTP sinks; sink = \"\(sink)\" \(how)")
        }
    }

    /// `sink = "postgresql"`: the libpq URL, the password file, schema and
    /// table, and the two timeouts.
    mutating func decodePostgres(_ t: TOMLTable, environment: [String: String]) -> SinkSettings? {
        refuseHTTPKeys(
            t, sink: "postgresql", keeping: SinkSettings.postgresKeys,
            because: "connects with libpq (TLS: sslmode, sslrootcert, sslcert, sslkey in upload.url)"
        )
        guard let url = string(t["url"], "upload.url"), !url.isEmpty else {
            problem(t["sink"], "upload.url", "is required with sink = \"postgresql\": a libpq URL, e.g. \"postgresql://ingest@127.0.0.1:5432/telemetry\"")
            return nil
        }
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") || url.contains("=") else {
            problem(t["url"], "upload.url", "must be a libpq URL (postgresql://user@host:port/database) or key=value string, got \"\(redactedURL(url).prefix(40))\"")
            return nil
        }
        var settings = PostgresSettings(url: url)
        settings.schema = identifier(t["schema"], "upload.schema")
        settings.table = identifier(t["table"], "upload.table")
        if let v = t["connect_timeout_ms"], let n = integer(v, "upload.connect_timeout_ms", min: 1) { settings.connectTimeoutMilliseconds = Int(n) }
        if let v = t["timeout_ms"], let n = integer(v, "upload.timeout_ms", min: 1) { settings.timeoutMilliseconds = Int(n) }
        settings.password = secret(t["password_file"], "upload.password_file", credential: "postgres-password", environment: environment, required: false)
        return .postgreSQL(settings)
    }

    /// A table or database name: letters, digits and underscores, not
    /// starting with a digit (what every engine takes unquoted).
    mutating func identifier(_ value: TOMLValue?, _ key: String) -> String? {
        guard let name = string(value, key) else { return nil }
        let plain = !name.isEmpty && name.utf8.count <= 128 && name.utf8.first.map { !(48...57).contains($0) } == true
            && name.utf8.allSatisfy { $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }
        guard plain else {
            problem(value, key, "must be a plain name (letters, digits, _; not starting with a digit), got \"\(name.prefix(40))\"")
            return nil
        }
        return name
    }

    /// The keys every sink shares: batch size, linger, retries, shutdown.
    mutating func decodeBatching(_ t: TOMLTable, into settings: UploadSettings) -> UploadSettings {
        var u = settings
        if let v = t["max_records"], let n = integer(v, "upload.max_records", min: 1) { u.maxRecords = Int(n) }
        if let v = t["max_bytes"], let n = integer(v, "upload.max_bytes", min: 1024) { u.maxBytes = Int(n) }
        if let v = t["linger_ms"], let n = integer(v, "upload.linger_ms", min: 0) { u.lingerMilliseconds = Int(n) }
        if let v = t["retry_base_ms"], let n = integer(v, "upload.retry_base_ms", min: 1) { u.backoff.baseSeconds = Double(n) / 1000 }
        if let v = t["retry_cap_ms"], let n = integer(v, "upload.retry_cap_ms", min: 1) { u.backoff.capSeconds = Double(n) / 1000 }
        if let v = t["max_retries"], let n = integer(v, "upload.max_retries", min: 0) { u.maxRetries = Int(n) }
        if let v = t["shutdown_timeout_ms"], let n = integer(v, "upload.shutdown_timeout_ms", min: 0) { u.shutdownTimeoutMilliseconds = Int(n) }
        if let v = t["hold_ms"], let n = integer(v, "upload.hold_ms", min: 10) { u.holdMilliseconds = Int(n) }
        if let v = t["client_id"], let id = string(v, "upload.client_id") { u.clientID = id }
        return u
    }

    /// The queue key: 64 raw bytes or 128 hexadecimal digits, from
    /// `queue.encryption_key_file`, else the systemd credential `queue-key`.
    mutating func encryptionKey(_ value: TOMLValue?, environment: [String: String]) -> [UInt8]? {
        var path = string(value, "queue.encryption_key_file")
        if path == nil, let directory = environment["CREDENTIALS_DIRECTORY"],
            let credential = readFileBytes(directory + "/queue-key"), !credential.allSatisfy({ $0 == 0x0A || $0 == 0x20 })
        {
            path = directory + "/queue-key"  // the unit's SetCredential= default (a newline) means "no key"
        }
        guard let path else { return nil }
        guard let bytes = readFileBytes(path) else {
            problem(value, "queue.encryption_key_file", "'\(path)' cannot be read: \(String(cString: strerror(errno)))")
            return nil
        }
        if bytes.count == 64 { return bytes }
        var text = bytes
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
        if text.count == 128, let key = Secrets.bytes(hex: Substring(decoding: text, as: UTF8.self)) { return key }
        problem(value, "queue.encryption_key_file", "'\(path)' must hold exactly 64 bytes, or 128 hexadecimal digits (make one with: head -c 64 /dev/urandom > FILE); it holds \(bytes.count) bytes")
        return nil
    }

    /// The entries of an array of tables (`[[name]]`): each table with its
    /// key (`name[n]`) and its value (for line numbers), unknown keys
    /// reported; anything else is a problem.
    mutating func arrayOfTables(_ value: TOMLValue?, _ name: String, known: Set<String>) -> [(key: String, table: TOMLTable, item: TOMLValue)] {
        guard let value else { return [] }
        guard case .array(let items) = value.kind else {
            problem(value, name, "must be an array of tables: write each entry as [[\(name)]]")
            return []
        }
        var tables: [(key: String, table: TOMLTable, item: TOMLValue)] = []
        for (n, item) in items.enumerated() {
            let key = "\(name)[\(n)]"
            guard case .table(let t) = item.kind else {
                problem(item, key, "must be a table")
                continue
            }
            rejectUnknown(t, known: known, prefix: key + ".", line: item.line)
            tables.append((key, t, item))
        }
        return tables
    }

    // MARK: Inputs

    mutating func decodeInputs(_ value: TOMLValue?, types: [RecordType]) -> [InputSettings] {
        var inputs: [InputSettings] = []
        var names = Set<String>()
        for (key, t, item) in arrayOfTables(value, "inputs", known: Self.inputKeys) {
            guard let kindName = string(t["kind"], key + ".kind") else {
                problem(item, key + ".kind", "is required: stdin, file, serial or http")
                continue
            }
            guard let kind = InputSettings.Kind(rawValue: kindName) else {
                problem(t["kind"], key + ".kind", "must be stdin, file, serial or http, got \"\(kindName)\"")
                continue
            }
            var input = InputSettings(kind: kind, name: kindName)
            if let f = t["format"], let name = string(f, key + ".format") {
                if let format = InputSettings.Format(rawValue: name) { input.format = format }
                else { problem(f, key + ".format", "must be ndjson or csv, got \"\(name)\"") }
            }
            if let v = t["type"], let name = string(v, key + ".type") {
                if types.contains(where: { $0.name == name }) || types.isEmpty { input.type = name }
                else { problem(v, key + ".type", "names no declared type: declare [types.\(name)] or use one of \(types.map(\.name).joined(separator: ", "))") }
            } else if types.count == 1 {
                input.type = types[0].name
            }
            switch kind {
            case .stdin:
                break
            case .file:
                if let p = t["paths"] { input.paths = strings(p, key + ".paths") }
                if input.paths.isEmpty { problem(t["paths"] ?? item, key + ".paths", "a file input needs at least one path or glob") }
                input.name = "file:" + input.paths.joined(separator: ",")
            case .serial:
                input.device = string(t["device"], key + ".device")
                if input.device == nil { problem(item, key + ".device", "a serial input needs its device, e.g. \"/dev/ttyUSB0\"") }
                input.name = "serial:" + (input.device ?? "?")
            case .http:
                input.http = decodeHTTPInput(t, key: key, item: item)
                input.name = "http:" + (input.http?.listen ?? "?")
                if input.format != .ndjson { problem(t["format"], key + ".format", "an http input reads NDJSON batches (docs/PROTOCOL.md)") }
            }
            if kind != .http {
                for name in Self.httpInputKeys.sorted() where t[name] != nil {
                    problem(t[name], key + "." + name, "applies only to an http input (kind = \"http\")")
                }
            }
            if let v = t["baud"], let n = integer(v, key + ".baud", min: 50) {
                if SerialSpeed.isSupported(Int(n)) { input.baud = Int(n) }
                else { problem(v, key + ".baud", "unsupported baud rate \(n): use one of \(SerialSpeed.supported.map(String.init).joined(separator: ", "))") }
            }
            if let v = t["delimiter"], let d = string(v, key + ".delimiter") {
                if d.utf8.count == 1 { input.delimiter = d.utf8.first! }
                else { problem(v, key + ".delimiter", "must be a single byte, e.g. \"\\n\" or \";\"") }
            }
            if let v = t["max_line_bytes"], let n = integer(v, key + ".max_line_bytes", min: 64) { input.maxLineBytes = Int(n) }
            if let v = t["poll_interval_ms"], let n = integer(v, key + ".poll_interval_ms", min: 10) { input.pollIntervalMilliseconds = Int(n) }
            if let v = t["start_at_end"], let b = bool(v, key + ".start_at_end") { input.startAtEnd = b }
            if let v = t["name"], let name = string(v, key + ".name") { input.name = name }
            if !names.insert(input.name).inserted {
                problem(item, key + ".name", "two inputs are named \"\(input.name)\": give each a distinct name")
            }
            if kind == .stdin, inputs.contains(where: { $0.kind == .stdin }) {
                problem(item, key + ".kind", "only one input can read stdin")
            }
            inputs.append(input)
        }
        return inputs
    }

    mutating func decodeHTTPInput(_ t: TOMLTable, key: String, item: TOMLValue) -> HTTPInputSettings? {
        guard let listen = string(t["listen"], key + ".listen") else {
            problem(item, key + ".listen", "an http input needs the address to listen on, e.g. \"127.0.0.1:8480\" or \"0.0.0.0:8480\"")
            return nil
        }
        var http = HTTPInputSettings(listen: listen)
        if (try? HTTPServer.split(listen)) == nil {
            problem(t["listen"], key + ".listen", "must be \"host:port\", e.g. \"127.0.0.1:8480\", \"0.0.0.0:8480\" or \"[::]:8480\"")
        }
        if let v = t["app_id"] { http.appID = string(v, key + ".app_id") }
        if let v = t["max_body_bytes"], let n = integer(v, key + ".max_body_bytes", min: 1024) { http.limits.maxBodyBytes = Int(n) }
        if let v = t["max_connections"], let n = integer(v, key + ".max_connections", min: 1) { http.maxConnections = Int(n) }
        if let v = t["request_timeout_ms"], let n = integer(v, key + ".request_timeout_ms", min: 100) { http.limits.requestTimeoutMilliseconds = Int(n) }
        if let v = t["idle_timeout_ms"], let n = integer(v, key + ".idle_timeout_ms", min: 100) { http.limits.idleTimeoutMilliseconds = Int(n) }
        if let v = t["dedup_window_s"], let n = integer(v, key + ".dedup_window_s", min: 0) { http.dedupWindowSeconds = n }
        if let v = t["anonymous"], let b = bool(v, key + ".anonymous") { http.anonymous = b }
        if let v = t["api_keys_file"] { http.apiKeysFile = string(v, key + ".api_keys_file") }
        if let v = t["users_file"] { http.usersFile = string(v, key + ".users_file") }
        return http
    }

    // MARK: Scalars

    mutating func table(_ value: TOMLValue?, _ key: String) -> TOMLTable? {
        guard let value else { return nil }
        guard case .table(let t) = value.kind else {
            problem(value, key, "must be a table ([\(key)]), got \(value.typeName)")
            return nil
        }
        return t
    }

    mutating func string(_ value: TOMLValue?, _ key: String) -> String? {
        guard let value else { return nil }
        guard case .string(let s) = value.kind else {
            problem(value, key, "must be a string (in quotes), got \(value.typeName)")
            return nil
        }
        return s
    }

    mutating func strings(_ value: TOMLValue, _ key: String) -> [String] {
        if case .string(let s) = value.kind { return [s] }
        guard case .array(let items) = value.kind else {
            problem(value, key, "must be an array of strings, got \(value.typeName)")
            return []
        }
        return items.compactMap { string($0, key) }
    }

    /// An integer of at least `min`. A duration (a key ending in `_ms`, `_s`
    /// or `_seconds`) is also at most 365 days, so that no deadline or
    /// window computed from it can overflow and crash the agent.
    mutating func integer(_ value: TOMLValue, _ key: String, min: Int64) -> Int64? {
        guard case .integer(let n) = value.kind else {
            problem(value, key, "must be an integer, got \(value.typeName)")
            return nil
        }
        guard n >= min else {
            problem(value, key, "must be at least \(min), got \(n)")
            return nil
        }
        let days365: Int64 = 365 * 24 * 3600
        let max = key.hasSuffix("_ms") ? days365 * 1000 : key.hasSuffix("_s") || key.hasSuffix("_seconds") ? days365 : Int64.max
        guard n <= max else {
            problem(value, key, "must be at most \(max) (365 days), got \(n)")
            return nil
        }
        return n
    }

    /// A secret from the file `value` names, else the systemd credential
    /// `credential`, read by the one rule of ``SecretText``. An optional
    /// secret's credential that is empty (the unit's `SetCredential=`
    /// default) is no secret, not an error; a file named in the config must
    /// hold one.
    mutating func secret(_ value: TOMLValue?, _ key: String, credential: String, environment: [String: String], required: Bool = true) -> String? {
        var path = string(value, key)
        let fromCredential = path == nil
        if path == nil, let directory = environment["CREDENTIALS_DIRECTORY"],
            required || access(directory + "/" + credential, F_OK) == 0
        {
            path = directory + "/" + credential
        }
        guard let path else {
            if required { problem(nil, key, "is required: a file holding the secret (mode 0600), or the systemd credential '\(credential)'") }
            return nil
        }
        guard let text = readTextFile(path) else {
            problem(value, key, "'\(path)' cannot be read: \(String(cString: strerror(errno)))")
            return nil
        }
        let secret = SecretText(text)
        if case .secret(let found) = secret { return found }
        if secret == .absent, fromCredential, !required { return nil }
        problem(value, key, secret.problem(path)!)
        return nil
    }

    mutating func bool(_ value: TOMLValue, _ key: String) -> Bool? {
        guard case .bool(let b) = value.kind else {
            problem(value, key, "must be true or false, got \(value.typeName)")
            return nil
        }
        return b
    }

    mutating func rejectUnknown(_ table: TOMLTable?, known: Set<String>, prefix: String, line: Int? = nil) {
        guard let table else { return }
        for entry in table.entries where !known.contains(entry.key) {
            problems.append(
                ConfigurationProblem(
                    line: entry.value.line, key: prefix + entry.key,
                    message: "unknown key: expected one of \(known.sorted().joined(separator: ", "))"
                )
            )
        }
    }
}

extension String {
    /// Rewrites "field 'value' …" in a validation message to name the config key.
    func replacingField(_ field: String, with key: String) -> String {
        guard hasPrefix("field '\(field)'") else { return self }
        return "must be " + (split(separator: " must be ", maxSplits: 1).last.map(String.init) ?? self)
    }
}
