import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

extension AgentConfiguration {
    /// Reads and checks a configuration file. Every problem is collected,
    /// so `check-config` can report them all at once.
    ///
    /// - Throws: ``ConfigurationError`` listing each problem with its line and key.
    package static func load(path: String, environment: [String: String]) throws -> AgentConfiguration {
        let text: String
        do {
            text = try readSmallTextFile(path, limit: FileLimits.configuration)
        } catch {
            throw ConfigurationError(
                path: path,
                problems: [
                    ConfigurationProblem(
                        line: nil,
                        key: "",
                        message: "cannot be read: \(error.reason)"
                    )
                ]
            )
        }
        return try parse(text, path: path, environment: environment)
    }

    /// The `agent.state_directory` a file names, read leniently: nil when
    /// the file cannot be read or parsed as TOML, or names none. For
    /// commands that only need to find a running agent whose configuration
    /// has problems since it started.
    package static func stateDirectoryNamed(inFile path: String) -> String? {
        guard let text = try? readSmallTextFile(path, limit: FileLimits.configuration),
            let root = try? TOMLDocument.parse(text),
            case .table(let agent)? = root["agent"]?.kind,
            case .string(let directory)? = agent["state_directory"]?.kind
        else { return nil }
        return directory
    }

    /// Parses configuration text; `path` names it in errors.
    package static func parse(_ text: String, path: String, environment: [String: String]) throws -> AgentConfiguration
    {
        let root: TOMLTable
        do {
            root = try TOMLDocument.parse(text)
        } catch let error as TOMLError {
            throw ConfigurationError(
                path: path,
                problems: [ConfigurationProblem(line: error.line, key: "", message: error.message)]
            )
        }
        var decoder = ConfigurationDecoder()
        let configuration = decoder.decode(root, environment: environment)
        guard decoder.problems.isEmpty, var configuration else {
            throw ConfigurationError(path: path, problems: decoder.problemsByLine)
        }
        configuration.uploadHolds = decoder.uploadHolds
        configuration.heldUploads = decoder.everyUploadHolds
        return configuration
    }
}

extension ConfigurationDecoder {
    /// The sections a configuration file may have; each is decoded by the
    /// file named after it (`ConfigurationDecoder+Queue.swift`, …).
    static let sections: Set<String> = [
        "agent", "queue", "types", "inputs", "upload", "auth", "client_reset", "migrations", "metrics", "clock",
        "delivery", "sinks",
    ]

    /// The whole file: every section, then the checks that span sections.
    mutating func decode(_ root: TOMLTable, environment: [String: String]) -> AgentConfiguration? {
        rejectUnknown(root, known: Self.sections, prefix: "")
        let agent = table(root["agent"], "agent")
        let queue = table(root["queue"], "queue")
        rejectUnknown(agent, known: Self.agentKeys, prefix: "agent.")
        rejectUnknown(queue, known: Self.queueKeys, prefix: "queue.")
        let types = decodeTypes(root["types"])
        let stateDirectory =
            string(agent?["state_directory"], "agent.state_directory")
            ?? AgentConfiguration.defaultStateDirectory(environment: environment)
        var inputs = decodeInputs(root["inputs"], types: types, environment: environment)
        if root["inputs"] == nil {
            var stdin = InputSettings(kind: .stdin, name: "stdin")
            stdin.type = types.count == 1 ? types[0].name : nil
            inputs = [stdin]
        }
        var c = AgentConfiguration(stateDirectory: stateDirectory, types: types, inputs: inputs)
        c.stateDirectoryIsDefault = agent?["state_directory"] == nil
        decodeQueue(queue, into: &c, environment: environment)
        decodeAgent(agent, into: &c)
        let upload = table(root["upload"], "upload")
        if let (settings, sink) = decodeUpload(upload, environment: environment) {
            c.upload = settings
            c.sink = sink
        }
        c.uploadRoute = decodeRoute(upload, section: "upload", types: types)
        c.namedSinks = decodeNamedSinks(root["sinks"], types: types, environment: environment)
        checkRoutes(c, sinks: root["sinks"])
        if let v = upload?["unhealthy_after_s"], let n = integer(v, "upload.unhealthy_after_s", min: 0) {
            c.unhealthyAfterSeconds = n
        }
        c.auth = decodeAuth(table(root["auth"], "auth"), environment: environment)
        c.clientReset = decodeClientReset(table(root["client_reset"], "client_reset"))
        c.metrics = decodeMetrics(table(root["metrics"], "metrics"))
        c.clockSource = decodeClock(table(root["clock"], "clock"))
        (c.acceptanceStamps, c.typeDelivery) = decodeDelivery(root["delivery"], types: types)
        let shares = c.typeDelivery.values.compactMap(\.share)
        if shares.reduce(0, +) > 1.000_001 {
            problem(
                root["delivery"],
                "delivery",
                "the types' shares add up to \(shares.reduce(0, +)): at most 1 (the whole queue.max_bytes)"
            )
        }
        if !shares.isEmpty, c.queue.maxBytes == nil {
            problem(root["delivery"], "delivery", "a share is a part of queue.max_bytes, which is not set: set it")
        }
        if upload?["unhealthy_after_s"] == nil, let older = c.metrics?.readyMaxAgeSeconds {
            c.unhealthyAfterSeconds = older
            c.unhealthyAfterKey = "ready_max_age_s"
        }
        c.migrations = decodeMigrations(root["migrations"], schemaVersion: c.queue.schemaVersion)
        if c.upload != nil, let upload { c.sink.configuration.check(c, upload: upload, &self) }
        if case .table(let named)? = root["sinks"]?.kind {
            for sink in c.namedSinks {
                guard case .table(let t)? = named[sink.name]?.kind else { continue }
                let first = problems.count
                sink.sink.configuration.check(c, upload: t, &self)
                for i in first..<problems.count { problems[i] = problems[i].moved(to: sink.section) }
            }
        }
        if !c.deliveringSinks.isEmpty { checkTenants(c, inputs: root["inputs"]) }
        if c.auth != nil, c.upload == nil {
            problem(root["auth"], "auth", "needs an [upload] section: logging in is only for uploading")
        }
        if c.auth != nil, c.upload != nil, !(c.sink.configuration is IngestSinkConfiguration) {
            problem(root["auth"], "auth", "only applies to sink = \"ingest\": a local sink needs no login")
        }
        if c.auth != nil, c.upload?.http.bearerToken != nil {
            problem(
                root["auth"],
                "auth",
                "and upload.token_file (or the upload-token credential) both give credentials: keep one"
            )
        }
        if types.isEmpty && problems.isEmpty {
            problem(
                root["types"],
                "types",
                "declare at least one record type, e.g. [types.WeatherSensor] with one 'field = \"type\"' line per field"
            )
        }
        return c
    }
}

extension ConfigurationDecoder {
    /// A gateway with accounts whose sink keys rows on `_id` alone lets one
    /// account's reading under an `_id` another sent first be answered
    /// "accepted" and never stored (the sink keeps the first). So accounts
    /// need `owner_field` (rows keyed on owner and `_id`) or an explicit
    /// `shared_id_space = true`. Earlier releases accepted such files: the
    /// agent still starts and collects, with uploads held until it is
    /// fixed (an upgrade never stops a box collecting); check-config fails.
    mutating func checkTenants(_ c: AgentConfiguration, inputs: TOMLValue?) {
        for (index, input) in c.inputs.enumerated() {
            guard let http = input.http, http.ownerField == nil, !http.sharedIDSpace,
                http.apiKeysFile != nil || http.usersFile != nil || http.tlsClientCAFile != nil
            else { continue }
            var item: TOMLValue?
            if case .array(let items)? = inputs?.kind, index < items.count { item = items[index] }
            holdEveryUpload(
                item,
                "inputs[\(index)]",
                "has accounts but no owner_field: the accounts share one _id space in the sink, so one account's reading under an _id another account sent first would be answered accepted and never stored. Set owner_field to a string field every type declares (rows are then keyed on the account and _id), or shared_id_space = true if ids cannot collide across accounts"
            )
        }
    }
}
