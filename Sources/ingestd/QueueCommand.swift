import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// `ingestd queue stats|peek`: what the queue holds, read while the agent
/// runs (no lock, nothing written).
enum QueueCommand {
    static let spec = CommandSpec(
        name: "queue",
        abstract: "Show what the queue holds, also while the agent runs.",
        discussion: """
            Both read the queue file without changing it, so they work next to a \\
            running agent: they see its last commit.
            """,
        subcommands: [Stats.spec, Peek.spec]
    )

    struct Stats: IngestdCommand {
        static let spec = CommandSpec(
            name: "stats",
            abstract: "Queued readings, bytes and age, dead letters and totals.",
            options: ConfigurationOptions.specs,
            command: Stats.self
        )
        let options: ConfigurationOptions

        init(_ arguments: ParsedArguments) { options = ConfigurationOptions(arguments) }

        func run() throws {
            let (configuration, queue) = try openAgentQueue(options, readOnly: true)
            let s = try queue.statistics()
            let age = s.oldestAgeMilliseconds.map { ", oldest \(max(0, $0) / 1000) s" } ?? ""
            print("queue \(configuration.resolvedQueuePath): \(s.fileBytes) bytes on disk")
            print("  queued:       \(s.queuedRecords) readings, \(s.queuedBytes) bytes\(age)")
            print("  dead letters: \(s.deadLetterRecords)")
            print("  appended:     \(s.appendedTotal)")
            print("  uploaded:     \(s.acknowledgedTotal)")
            print("  dropped:      \(s.droppedTotal)" + AgentStatus.reasons(s.droppedByReason))
            // With several sinks, what waits for each (read from the file).
            let sinks = try queue.sinkStatistics()
            guard sinks.count > 1 else { return }
            for sink in sinks {
                let dropped = sink.droppedByReason.values.reduce(0, +)
                print(
                    "  sink \(sink.name): \(sink.queuedRecords) queued (\(sink.queuedBytes) bytes), \(sink.acknowledgedTotal) uploaded, \(sink.deadLetteredTotal) dead letters, \(dropped) dropped"
                        + AgentStatus.reasons(sink.droppedByReason)
                )
            }
        }
    }

    struct Peek: IngestdCommand {
        static let spec = CommandSpec(
            name: "peek",
            abstract: "Print the oldest queued readings as NDJSON (nothing is taken or changed).",
            discussion: """
                Each line is a reading as it will be sent, oldest first. Without --type, \\
                readings of every type.

                Example:
                  ingestd queue peek --type WeatherSensor --limit 5
                """,
            options: ConfigurationOptions.specs + [typeOption.spec, limitOption.spec],
            command: Peek.self
        )
        static let typeOption = Option<String>("type", "type", help: "Only readings of this record type.")
        static let limitOption = Option.integer(
            "limit",
            "n",
            help: "Print at most this many.",
            default: 10,
            in: 0...Int64(Int32.max)
        )

        let options: ConfigurationOptions
        let type: String?
        let limit: Int

        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = ConfigurationOptions(arguments)
            type = arguments[Self.typeOption]
            limit = Int(try arguments.value(Self.limitOption) ?? 10)
        }

        func run() throws {
            let (configuration, queue) = try openAgentQueue(options, readOnly: true)
            if let type, !configuration.types.contains(where: { $0.name == type }) {
                printError(
                    "No record type '\(type)' in the configuration: one of \(configuration.types.map(\.name).joined(separator: ", "))."
                )
                throw ExitCodes.usageError
            }
            for record in try queue.peek(type: type, limit: limit) {
                print(String(decoding: record.json, as: UTF8.self))
            }
        }
    }
}
