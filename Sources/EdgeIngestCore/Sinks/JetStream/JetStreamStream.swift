/// What the sink knows of its stream, read from the JetStream API at each
/// connection (`$JS.API.STREAM.INFO.<name>`), and how it creates one.
struct JetStreamStream: Sendable, Equatable {
    var name: String
    var subjects: [String]
    var replicas: Int
    /// How long the stream remembers a message id (`duplicate_window`).
    var duplicateWindowSeconds: Double

    /// Reads the stream's description; creates the stream when it does not
    /// exist and `settings.createStream` says how.
    static func check(
        on connection: NATSConnection,
        _ settings: JetStreamSettings
    ) throws(JetStreamError) -> (
        stream: JetStreamStream, created: Bool
    ) {
        let answer = try connection.request("$JS.API.STREAM.INFO.\(settings.stream)", [])
        if let found = try parse(answer, settings: settings, connection: connection, doing: "reading") {
            return (found, false)
        }
        guard let creation = settings.createStream else {
            throw JetStreamError(
                .configuration,
                "the JetStream stream '\(settings.stream)' does not exist on \(connection.server): create it (nats stream add) or set create_stream = true"
            )
        }
        let subjects =
            creation.subjects.isEmpty ? JetStreamSettings.createdSubjects(for: settings.subject) : creation.subjects
        let config = JSONValue.object([
            ("name", .string(settings.stream)), ("subjects", .array(subjects.map(JSONValue.string))),
            ("retention", .string("limits")), ("storage", .string("file")),
            ("num_replicas", .int(Int64(creation.replicas))),
            ("duplicate_window", .int(Int64(creation.duplicateWindowSeconds) * 1_000_000_000)),
        ])
        var payload: [UInt8] = []
        config.write(to: &payload)
        let created = try connection.request("$JS.API.STREAM.CREATE.\(settings.stream)", payload)
        guard let stream = try parse(created, settings: settings, connection: connection, doing: "creating") else {
            throw JetStreamError(.transient, "the JetStream stream '\(settings.stream)' could not be created")
        }
        return (stream, true)
    }

    /// The stream from an INFO or CREATE answer; nil when it does not exist.
    private static func parse(
        _ answer: (status: Int?, payload: [UInt8]),
        settings: JetStreamSettings,
        connection: NATSConnection,
        doing what: String
    ) throws(JetStreamError) -> JetStreamStream? {
        if answer.status == 503 {
            throw JetStreamError(
                .configuration,
                "no JetStream answers on \(connection.server) (no responders): enable JetStream on the server (jetstream {} in its configuration), or check the account"
            )
        }
        guard let value = try? JSONValue.parse(answer.payload) else {
            throw JetStreamError(
                .transient,
                "the JetStream API of \(connection.server) answered with something that is not JSON"
            )
        }
        if let error = value["error"] {
            let code = error["err_code"]?.int64 ?? 0
            let description = error["description"]?.string ?? "an error"
            if code == 10059 { return nil }  // stream not found
            // 10039: JetStream not enabled for the account; 10008: temporarily unavailable.
            throw JetStreamError(
                error["code"]?.int64 == 503 || code == 10008 ? .transient : .configuration,
                "\(what) the JetStream stream '\(settings.stream)' failed on \(connection.server): \(description.prefix(200))"
            )
        }
        guard let config = value["config"] else {
            throw JetStreamError(
                .transient,
                "the JetStream API of \(connection.server) answered without a stream config"
            )
        }
        return JetStreamStream(
            name: config["name"]?.string ?? settings.stream,
            subjects: config["subjects"]?.array?.compactMap { $0.string } ?? [],
            replicas: Int(config["num_replicas"]?.int64 ?? 1),
            duplicateWindowSeconds: Double(config["duplicate_window"]?.int64 ?? 0) / 1e9
        )
    }
}
