import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

enum DeadLetterCommand {
    static let spec = CommandSpec(
        name: "dead-letter",
        abstract: "List, export, replay or purge records the backend refused one by one.",
        discussion: """
            Dead letters are records a backend refused (isolated by bisecting a rejected \
            batch, or rejected in a 2xx body, or out of retries). They are kept with the \
            reason, never retried automatically. list and export read the queue, also \
            while the agent runs; replay and purge change it, so stop the agent first \
            (systemctl stop ingestd): a running agent holds it. With several sinks \
            ([sinks.NAME]) each dead letter belongs to the sink that refused it; \
            --sink NAME limits a command to that sink's, and a replay sends each \
            letter back to its own sink only.
            """,
        subcommands: [List.spec, Export.spec, Replay.spec, Purge.spec]
    )

    static func openQueue(_ options: ConfigurationOptions) throws -> DurableQueue {
        try openAgentQueue(options).1
    }

    static func openQueueForReading(_ options: ConfigurationOptions) throws -> DurableQueue {
        try openAgentQueue(options, readOnly: true).1
    }

    static let sinkOption = Option<String>(
        "sink",
        "name",
        help: "Only the dead letters of this sink: upload ([upload]) or a [sinks.NAME]'s name."
    )

    /// The dead letters, of `sink` only when given (an unknown name is an error naming the sinks).
    static func letters(_ queue: DurableQueue, sink: String?) throws -> [DeadLetter] {
        guard let sink else { return try queue.deadLetters() }
        let names = queue.configuration.routing.sinks.map(\.name)
        guard names.contains(sink) else {
            printError("No sink '\(sink)' in this configuration; its sinks: \(names.joined(separator: ", ")).")
            throw ExitCodes.usageError
        }
        return try queue.deadLetters().filter { $0.sink == sink }
    }

    struct List: IngestdCommand {
        static let spec = CommandSpec(
            name: "list",
            abstract: "Show the dead letters (without their data).",
            options: ConfigurationOptions.specs + [limitOption.spec, DeadLetterCommand.sinkOption.spec],
            command: List.self
        )
        static let limitOption = Option.integer(
            "limit",
            "limit",
            help: "Show at most this many.",
            default: 50,
            in: 0...Int64(Int32.max)
        )
        let options: ConfigurationOptions
        let limit: Int
        let sink: String?

        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = ConfigurationOptions(arguments)
            limit = Int(try arguments.value(Self.limitOption) ?? 50)
            sink = arguments[DeadLetterCommand.sinkOption]
        }

        func run() throws {
            let queue = try DeadLetterCommand.openQueueForReading(options)
            let letters = try DeadLetterCommand.letters(queue, sink: sink)
            let several = queue.configuration.routing.sinks.count > 1
            print("\(letters.count) dead letter\(letters.count == 1 ? "" : "s")")
            for letter in letters.prefix(limit) {
                let from = several ? "  sink \(letter.sink ?? "(removed)")" : ""
                print("  #\(letter.number)  \(letter.recordID)  \(letter.type)\(from)  \(letter.reason)")
            }
            if letters.count > limit { print("  … \(letters.count - limit) more (--limit)") }
        }
    }

    struct Export: IngestdCommand {
        static let spec = CommandSpec(
            name: "export",
            abstract: "Write the dead letters, with their data, as NDJSON (mode 0600).",
            discussion:
                "Each line: {\"number\", \"_id\", \"type\", \"schema_version\", \"reason\", \"failed_at\", \"sink\", \"record\"}.",
            options: ConfigurationOptions.specs + [outOption.spec, DeadLetterCommand.sinkOption.spec],
            command: Export.self
        )
        static let outOption = Option<String>("out", "file", help: "The file to write.", required: true)
        let options: ConfigurationOptions
        let out: String
        let sink: String?

        init(_ arguments: ParsedArguments) {
            options = ConfigurationOptions(arguments)
            out = arguments.required(Self.outOption)
            sink = arguments[DeadLetterCommand.sinkOption]
        }

        func run() throws {
            let letters = try DeadLetterCommand.letters(DeadLetterCommand.openQueueForReading(options), sink: sink)
            let progress = Progress(total: letters.count, label: "exported")
            do {
                try DeadLetter.export(letters, toFile: out) { progress.update($0) }
            } catch let error as EdgeIngestError {
                printError(error.message)
                throw ExitCodes.ioError
            }
            progress.finish()
            printError("Exported \(letters.count) dead letter\(letters.count == 1 ? "" : "s") to \(out).")
        }
    }

    struct Replay: IngestdCommand {
        static let spec = CommandSpec(
            name: "replay",
            abstract: "Move dead letters back into the queue to be uploaded again (same _ids).",
            discussion: "Fix the backend (or the data's cause) first, or the records come back.",
            options: ConfigurationOptions.specs + [allFlag.spec, numberOption.spec, DeadLetterCommand.sinkOption.spec],
            command: Replay.self
        )
        static let allFlag = Flag("all", help: "Replay every dead letter.")
        static let numberOption = Option.integer(
            "number",
            "number",
            help: "Replay this dead letter (repeatable).",
            repeatable: true
        )
        let options: ConfigurationOptions
        let all: Bool
        let numbers: [Int64]
        let sink: String?

        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = ConfigurationOptions(arguments)
            sink = arguments[DeadLetterCommand.sinkOption]
            all = arguments[Self.allFlag]
            numbers = try arguments.values(Self.numberOption)
            if !all && numbers.isEmpty { throw UsageError("Say which: --all, or --number N (repeatable).") }
            if all && !numbers.isEmpty { throw UsageError("--all and --number exclude each other.") }
            if let bad = numbers.first(where: { $0 < 1 }) {
                throw UsageError(
                    "--number takes a dead letter's number as `ingestd dead-letter list` shows it (1 or more), got \(bad)."
                )
            }
        }

        func run() throws {
            let queue = try DeadLetterCommand.openQueue(options)
            var chosen: Set<Int64>? = all ? nil : Set(numbers)
            if sink != nil {
                let ofSink = Set(try DeadLetterCommand.letters(queue, sink: sink).map(\.number))
                chosen = chosen?.intersection(ofSink) ?? ofSink
            }
            let n = try queue.replayDeadLetters(chosen)
            print("Replayed \(n) dead letter\(n == 1 ? "" : "s") into the queue.")
        }
    }

    struct Purge: IngestdCommand {
        static let spec = CommandSpec(
            name: "purge",
            abstract: "Delete dead letters for good (export them first if they may be needed).",
            discussion: """
                On a terminal it asks before deleting (--yes does not ask); in a script \
                the options are the confirmation. Exits 0 with the number deleted, 1 when \
                the question is answered no.

                Examples:
                  ingestd dead-letter purge --older-than 30d
                  ingestd dead-letter export --out refused.ndjson && ingestd dead-letter purge --all --yes
                """,
            options: ConfigurationOptions.specs + [
                allFlag.spec, olderThanOption.spec, yesFlag.spec, DeadLetterCommand.sinkOption.spec,
            ],
            command: Purge.self
        )
        static let allFlag = Flag("all", help: "Delete every dead letter.")
        static let olderThanOption = Option<String>(
            "older-than",
            "age",
            help: "Delete those refused longer ago than this: 90s, 30m, 12h or 7d."
        )
        static let yesFlag = Flag("yes", help: "Do not ask on a terminal.")

        let options: ConfigurationOptions
        /// Milliseconds; nil with --all.
        let olderThan: Int64?
        let yes: Bool
        let sink: String?

        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = ConfigurationOptions(arguments)
            yes = arguments[Self.yesFlag]
            sink = arguments[DeadLetterCommand.sinkOption]
            let all = arguments[Self.allFlag]
            let age = arguments[Self.olderThanOption]
            switch (all, age) {
            case (true, nil): olderThan = nil
            case (false, let age?):
                guard let milliseconds = Self.milliseconds(age) else {
                    throw UsageError(
                        "--older-than takes a number with s, m, h or d (90s, 30m, 12h, 7d), got '\(age)'.",
                        option: Self.olderThanOption.spec
                    )
                }
                olderThan = milliseconds
            case (true, _?): throw UsageError("--all and --older-than exclude each other.")
            case (false, nil): throw UsageError("Say which: --all, or --older-than AGE (e.g. 7d).")
            }
        }

        /// "90s", "30m", "12h", "7d" in milliseconds.
        static func milliseconds(_ text: String) -> Int64? { parseDurationMilliseconds(text) }

        func run() throws {
            let queue = try DeadLetterCommand.openQueue(options)
            let cutoff = olderThan.map { wallClockMilliseconds() - $0 }
            let chosen = try DeadLetterCommand.letters(queue, sink: sink).filter { letter in
                cutoff.map { letter.failedAt < $0 } ?? true
            }
            guard !chosen.isEmpty else {
                print("No dead letters to delete.")
                return
            }
            if !yes, isatty(0) == 1, isatty(2) == 1 {
                printErrorInline("Delete \(chosen.count) dead letter\(chosen.count == 1 ? "" : "s") for good? [y/N] ")
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    printError("Nothing deleted.")
                    throw ExitCodes.unhealthy
                }
            }
            let n = try queue.purgeDeadLetters(failedBefore: cutoff, sink: sink)
            print("Deleted \(n) dead letter\(n == 1 ? "" : "s").")
        }
    }
}
