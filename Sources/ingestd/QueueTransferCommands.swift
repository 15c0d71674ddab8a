import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// Opens the agent's queue for a command run while the agent is stopped,
/// or with `readOnly` to read it, also while the agent runs (no lock,
/// nothing written: ``DurableQueue/openForReading(_:logger:)``).
func openAgentQueue(
    _ options: ConfigurationOptions,
    readOnly: Bool = false
) throws -> (AgentConfiguration, DurableQueue) {
    let configuration = try loadAgentConfiguration(options, saying: !readOnly)
    return (configuration, try openQueue(configuration.queueConfiguration, readOnly: readOnly))
}

/// Loads the agent's configuration with the state directory of the agent
/// it is about (``ConfigurationOptions/loadFindingTheAgent(environment:)``),
/// turning failures into a message and exit 78. `saying`: a command that
/// changes the queue says on stderr when that directory is another than
/// the configuration's default.
func loadAgentConfiguration(_ options: ConfigurationOptions, saying: Bool = true) throws -> AgentConfiguration {
    do {
        let environment = processEnvironment()
        let configuration = try options.loadFindingTheAgent(environment: environment)
        if saying, options.stateDirectory == nil, configuration.stateDirectoryIsDefault,
            configuration.stateDirectory != AgentConfiguration.defaultStateDirectory(environment: environment)
        {
            printError(
                "ingestd: the agent's state is in \(configuration.stateDirectory) (the newest status file); pass --state-directory to choose another."
            )
        }
        return configuration
    } catch {
        printError("\(error)")
        throw ExitCodes.configError
    }
}

/// Opens a queue, turning failures into a message and an exit code.
func openQueue(_ queueConfiguration: QueueConfiguration, readOnly: Bool = false) throws -> DurableQueue {
    do {
        return try readOnly ? DurableQueue.openForReading(queueConfiguration) : DurableQueue.open(queueConfiguration)
    } catch {
        printError("\(error)")
        throw ExitCodes.forError(error)
    }
}

/// A queue file for moving records between boxes, with the agent's types.
/// With an encryption key, the file is encrypted with it too: the box that
/// imports it needs the same key.
func transferQueueConfiguration(
    path: String,
    types: [RecordType],
    schemaVersion: Int64,
    key: [UInt8]? = nil
) -> QueueConfiguration {
    var configuration = QueueConfiguration(location: .file(path: path), objectTypes: types)
    configuration.encryptionKey = key
    configuration.maxBytes = nil
    configuration.schemaVersion = schemaVersion
    configuration.shouldCompactOnLaunch = nil
    return configuration
}

/// Copies `source`'s pending readings into `target` (optionally removing
/// them from `source`), with a progress display on a terminal.
func transfer(
    from source: DurableQueue,
    to target: DurableQueue,
    discard: DropReason? = nil,
    label: String
) throws -> Int64 {
    do {
        let progress = Progress(total: Int(try source.statistics().queuedRecords), label: label)
        let copied = try source.copyPending(into: target, discard: discard) { progress.update(Int($0)) }
        progress.finish()
        return copied
    } catch {
        printError("\(error)")
        throw ExitCodes.forError(error)
    }
}

struct ExportCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "export",
        abstract: "Copy the queued readings into a file another box can import.",
        discussion: """
            For a box with no network: export its queue, carry the file over, and run \
            `ingestd import FILE` on a box that uploads. Records keep their _id, so a \
            backend that deduplicates stores each once even if both boxes upload them. \
            The file is a queue file (SQLite, mode 0600). Stop the agent first \
            (systemctl stop ingestd): a running agent holds the queue.
            """,
        options: ConfigurationOptions.specs + [outOption.spec, moveFlag.spec],
        command: ExportCommand.self
    )
    static let outOption = Option<String>(
        "out",
        "file",
        help: "The file to create (it must not exist).",
        required: true
    )
    static let moveFlag = Flag(
        "move",
        help: "Remove the exported readings from this box's queue (counted as dropped, reason 'exported')."
    )
    let options: ConfigurationOptions
    let out: String
    let move: Bool

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        out = arguments.required(Self.outOption)
        move = arguments[Self.moveFlag]
        if access(out, F_OK) == 0 { throw UsageError("'\(out)' exists: give a new file name.") }
    }

    func run() throws {
        let (configuration, queue) = try openAgentQueue(options)
        let target = try openQueue(
            transferQueueConfiguration(
                path: out,
                types: configuration.types,
                schemaVersion: configuration.queue.schemaVersion,
                key: configuration.queue.encryptionKey
            )
        )
        let copied = try transfer(from: queue, to: target, discard: move ? .exported : nil, label: "exported")
        // The file's identity: an import of the same file twice is refused.
        do {
            try target.setPosition(
                source: ExportMark.exportPrefix + SendCommand.newSessionID(),
                position: "\(copied) readings exported at \(isoNow())"
            )
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        // A move drops what it carried, and a damaged segment is quarantined
        // here either way: status shows the queue as it now is.
        refreshStoppedStatus(configuration, queue: queue)
        print(
            "Exported \(copied) reading\(copied == 1 ? "" : "s") to \(out)\(move ? " and removed them from the queue" : "")."
        )
    }
}

struct ImportCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "import",
        abstract: "Add the readings of an exported file to this box's queue.",
        discussion: """
            The readings keep their _id and schema version and are uploaded like any \
            other. The file is left as it was; delete it once imported. The same file \
            imported into the same queue again is refused (exit 65), so its readings \
            are never queued twice (files exported before 0.2.0 carry no mark: \
            import those once). Stop the agent first: a running agent holds the queue.
            """,
        options: ConfigurationOptions.specs,
        arguments: [fileArgument.spec],
        command: ImportCommand.self
    )
    static let fileArgument = Argument("file", help: "A file written by `ingestd export`.")
    let options: ConfigurationOptions
    let file: String

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        file = arguments[Self.fileArgument]
        if access(file, R_OK) != 0 {
            throw UsageError("'\(file)' cannot be read: \(String(cString: strerror(errno))).")
        }
    }

    func run() throws {
        let (configuration, queue) = try openAgentQueue(options)
        // An export of an encrypted queue is encrypted with the same key; one of
        // an unencrypted queue is not. Opening without a key first never gives
        // the file a key check of its own.
        var source = transferQueueConfiguration(
            path: file,
            types: configuration.types,
            schemaVersion: configuration.queue.schemaVersion
        )
        let opened: DurableQueue
        do {
            opened = try DurableQueue.open(source)
        } catch let error as EdgeIngestError where error.code == .encryption && configuration.queue.encryptionKey != nil
        {
            source.encryptionKey = configuration.queue.encryptionKey
            opened = try openQueue(source)
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        let mark: String?
        do {
            mark = try opened.positions().keys.first { $0.hasPrefix(ExportMark.exportPrefix) }
                .map { ExportMark.importPrefix + $0.dropFirst(ExportMark.exportPrefix.count) }
            if let mark, let earlier = try queue.position(of: mark) {
                printError(
                    "ingestd import: '\(file)' was imported into this queue before (\(earlier)); nothing was imported. Importing an export again would queue its readings twice: delete the file once imported."
                )
                throw ExitCodes.dataError
            }
        } catch let error as EdgeIngestError {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        let copied = try transfer(from: opened, to: queue, label: "imported")
        // After the copy: a crash in between leaves no mark (importing again
        // then queues twice, which a deduplicating backend absorbs) rather
        // than a mark without the readings (which would refuse to import them).
        if let mark {
            do {
                try queue.setPosition(source: mark, position: "\(copied) readings imported at \(isoNow())")
            } catch {
                printError("\(error)")
                throw ExitCodes.forError(error)
            }
        }
        refreshStoppedStatus(configuration, queue: queue)
        print("Imported \(copied) reading\(copied == 1 ? "" : "s") from \(file).")
    }
}

/// The marks `export` leaves in its file and `import` in the queue it
/// imports into (queue positions), so one file is imported once.
enum ExportMark {
    static let exportPrefix = "export:"
    static let importPrefix = "import:"
}

struct ResetCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "reset",
        abstract: "Resolve a client reset the backend demanded (client_reset.mode = \"manual\").",
        discussion: """
            --recover re-sends the queued readings under a new session; --discard first \
            copies them into a backup file in client_reset.backup_directory, then drops \
            them (counted as dropped, reason client_reset). Stop the agent first \
            (systemctl stop ingestd), run this, start it again.
            """,
        options: ConfigurationOptions.specs + [recoverFlag.spec, discardFlag.spec],
        command: ResetCommand.self
    )
    static let recoverFlag = Flag("recover", help: "Re-send the queued readings under a new session.")
    static let discardFlag = Flag("discard", help: "Back up, then drop the queued readings, and start a new session.")
    let options: ConfigurationOptions
    let recover: Bool
    let discard: Bool

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        recover = arguments[Self.recoverFlag]
        discard = arguments[Self.discardFlag]
        if recover == discard { throw UsageError("Give exactly one of --recover and --discard.") }
    }

    func run() throws {
        let (configuration, queue) = try openAgentQueue(options)
        do {
            guard try ClientResetHandler.isPending(in: queue) else {
                print("No client reset is pending; nothing was changed.")
                return
            }
            var backup: DurableQueue?
            var backupPath = ""
            if discard {
                backupPath = configuration.clientResetBackupDirectory + "/client-reset-\(isoNow()).ingest.sqlite"
                backup = try openQueue(
                    transferQueueConfiguration(
                        path: backupPath,
                        types: configuration.types,
                        schemaVersion: configuration.queue.schemaVersion,
                        key: configuration.queue.encryptionKey
                    )
                )
            }
            let discarded = try ClientResetHandler.resolveStopped(queue: queue, discardInto: backup)
            refreshStoppedStatus(configuration, queue: queue)
            if discard {
                print(
                    "Discarded \(discarded) reading\(discarded == 1 ? "" : "s") (backup: \(backupPath)); a new session starts with the agent."
                )
            } else {
                print("The queued readings will be re-sent under a new session when the agent starts.")
            }
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
    }
}
