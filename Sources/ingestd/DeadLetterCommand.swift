import ArgumentParser
import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

struct DeadLetterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letter",
        abstract: "List, export or replay records the backend refused one by one.",
        discussion: """
            Dead letters are records a backend refused (isolated by bisecting a rejected \
            batch, or rejected in a 2xx body, or out of retries). They are kept with the \
            reason, never retried automatically. These commands open the queue, so stop \
            the agent first (systemctl stop ingestd): a running agent holds it.
            """,
        subcommands: [List.self, Export.self, Replay.self]
    )

    static func openQueue(_ options: ConfigurationOptions) throws -> DurableQueue {
        try openAgentQueue(options).1
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the dead letters (without their data).")
        @OptionGroup var options: ConfigurationOptions
        @Option(help: "Show at most this many.") var limit = 50

        func run() throws {
            let letters = try DeadLetterCommand.openQueue(options).deadLetters()
            print("\(letters.count) dead letter\(letters.count == 1 ? "" : "s")")
            for letter in letters.prefix(limit) {
                print("  #\(letter.number)  \(letter.recordID)  \(letter.type)  \(letter.reason)")
            }
            if letters.count > limit { print("  … \(letters.count - limit) more (--limit)") }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the dead letters, with their data, as NDJSON (mode 0600).",
            discussion: "Each line: {\"number\", \"_id\", \"type\", \"schema_version\", \"reason\", \"failed_at\", \"record\"}."
        )
        @OptionGroup var options: ConfigurationOptions
        @Option(help: ArgumentHelp("The file to write.", valueName: "file")) var out: String

        func run() throws {
            let letters = try DeadLetterCommand.openQueue(options).deadLetters()
            let fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            // An existing file keeps its mode through O_CREAT: the records are private.
            guard fd >= 0, fchmod(fd, 0o600) == 0 else {
                printError("Cannot write '\(out)': \(String(cString: strerror(errno))).")
                throw ExitCodes.ioError
            }
            defer { close(fd) }
            let progress = Progress(total: letters.count, label: "exported")
            for (i, letter) in letters.enumerated() {
                var line = "{\"number\":\(letter.number),\"_id\":\"\(letter.recordID)\",\"type\":\(jsonString(letter.type)),\"schema_version\":\(letter.schemaVersion),\"reason\":\(jsonString(letter.reason)),\"failed_at\":\(letter.failedAt),\"record\":"
                line += String(decoding: letter.payload, as: UTF8.self) + "}\n"
                var bytes = Array(line.utf8)
                guard bytes.withUnsafeMutableBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
                    printError("Writing '\(out)' failed: \(String(cString: strerror(errno))).")
                    throw ExitCodes.ioError
                }
                progress.update(i + 1)
            }
            progress.finish()
            printError("Exported \(letters.count) dead letter\(letters.count == 1 ? "" : "s") to \(out).")
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move dead letters back into the queue to be uploaded again (same _ids).",
            discussion: "Fix the backend (or the data's cause) first, or the records come back."
        )
        @OptionGroup var options: ConfigurationOptions
        @Flag(help: "Replay every dead letter.") var all = false
        @Option(name: .customLong("number"), help: "Replay this dead letter (repeatable).") var numbers: [Int64] = []

        func validate() throws {
            if !all && numbers.isEmpty { throw ValidationError("Say which: --all, or --number N (repeatable).") }
            if all && !numbers.isEmpty { throw ValidationError("--all and --number exclude each other.") }
        }

        func run() throws {
            let queue = try DeadLetterCommand.openQueue(options)
            let n = try queue.replayDeadLetters(all ? nil : Set(numbers))
            print("Replayed \(n) dead letter\(n == 1 ? "" : "s") into the queue.")
        }
    }
}

func jsonString(_ s: String) -> String {
    var out: [UInt8] = []
    JSONWriter.appendString(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}
