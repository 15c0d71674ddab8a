import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

@main
enum Ingestd {
    static func main() {
        // ingestd's own executors (no libdispatch pool monitor waking every
        // second); the agent runs in a task, the main thread serves the main actor.
        AgentExecutors.run {
            let status = await CommandRunner(root: spec, version: EdgeIngestVersion.current).run(
                Array(CommandLine.arguments.dropFirst())
            )
            exit(status)
        }
    }

    static let spec = CommandSpec(
        name: "ingestd",
        abstract: "Edge telemetry ingest agent: sensor readings in, exactly once to the backend.",
        discussion: """
            ingestd reads readings (NDJSON or CSV) from stdin, followed files and serial \
            ports, a local socket (`ingestd send`) and MQTT, or receives them over HTTP from \
            other EdgeIngest clients (a gateway), validates them against the record types \
            declared in its configuration, commits them to a durable SQLite queue that \
            survives crashes and power cuts, and streams them to a sink (upload.sink; more \
            with [sinks.NAME]), deleting each only after the sink confirmed it: ingest (the \
            ingest protocol over HTTP, the default), sqlite (a local SQLite archive), \
            clickhouse, postgresql, influxdb (line protocol: InfluxDB, VictoriaMetrics), mqtt \
            (a broker) or jetstream (a NATS JetStream stream, exactly once by Nats-Msg-Id).

            Installed files (Debian package): /usr/bin/ingestd, the unit \
            /lib/systemd/system/ingestd.service, the configuration /etc/ingestd/ingestd.toml, \
            secrets in /etc/ingestd/credentials/, the queue in /var/lib/ingestd. \
            Logs: journalctl -u ingestd.

            Configuration: --config FILE, else $CONFIGURATION_DIRECTORY/ingestd.toml (systemd), \
            else /etc/ingestd/ingestd.toml. etc/ingestd.toml in the source tree documents every key.

            Exit codes: 0 success; 1 unhealthy (status); 3 agent not running (status); \
            64 bad command-line usage; 65 bad data (`verify` or `repair` found damage in \
            the queue file — `run` repairs such a file by itself; lines `send` had refused); 74 I/O error (queue unavailable; readings that a full disk \
            kept from being committed before a stop; `send` cannot reach the agent); \
            75 try again (`send`: the agent stopped before confirming every line; `run` \
            in pipe mode: the input ended but readings are left queued, undelivered); \
            78 configuration error (also a [[migrations]] that cannot convert the \
            queued readings: nothing is changed).
            """,
        subcommands: [
            RunCommand.spec, SendCommand.spec, CheckConfigCommand.spec, StatusCommand.spec, QueueCommand.spec,
            VerifyCommand.spec, RepairCommand.spec, DeadLetterCommand.spec,
            ExportCommand.spec, ImportCommand.spec, ResetCommand.spec, HashSecretCommand.spec,
        ]
    )
}
