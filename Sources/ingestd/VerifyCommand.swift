import EdgeIngestCore
import IngestAgent

/// `ingestd verify`: the queue file's integrity, read-only (docs/QUEUE.md
/// "Integrity").
struct VerifyCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "verify",
        abstract: "Check the queue file for damage (read-only; works while the agent runs).",
        discussion: """
            Checks every queued segment and dead letter against its checksum and \\
            structure, the rows of a gateway's received ids and client sessions \\
            by their structure, SQLite's own structure (PRAGMA quick_check), and that the \\
            counters add up (appended = queued + uploaded + dead letters + \\
            quarantined + dropped). Changes nothing.

            Exit codes: 0 intact; 65 damage found (stop the agent and run \\
            `ingestd repair`); 74 the queue cannot be opened; 78 configuration error.
            """,
        options: ConfigurationOptions.specs,
        command: VerifyCommand.self
    )
    let options: ConfigurationOptions

    init(_ arguments: ParsedArguments) { options = ConfigurationOptions(arguments) }

    func run() throws {
        let (configuration, queue) = try openAgentQueue(options, readOnly: true)
        let report = try queue.verify()
        printVerification(report, path: configuration.resolvedQueuePath)
        guard report.isIntact else {
            print("damaged: stop the agent and run `ingestd repair` (damaged readings are quarantined, never sent).")
            throw ExitCodes.dataError
        }
        print("intact")
    }
}

/// `ingestd repair`: quarantines what `verify` finds damaged.
struct RepairCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "repair",
        abstract: "Quarantine damaged queue segments and correct the counters (agent stopped).",
        discussion: """
            Moves every segment and dead letter that fails its checks into the \\
            queue's quarantine table (kept as stored, never uploaded, counted as \\
            quarantined) and, if the counters do not add up, counts the missing \\
            readings as dropped with reason `damaged`. The rest of the queue is \\
            untouched and uploads as usual. Needs the agent stopped \\
            (systemctl stop ingestd).

            When SQLite reports the file's own structure damaged (a truncated \\
            file, a broken page), the file is first copied as it is to \\
            <file>.corrupt-<ms>, then rebuilt from every row that can still be \\
            read. A 0-byte file is moved aside and an empty queue started. When \\
            the file's counters went with the damage, they are put back from the \\
            status file's last numbers, so the readings that were lost are counted \\
            as dropped (damaged). Damaged rows of a gateway's received ids or \\
            sessions are deleted: a batch sent again within the deduplication \\
            window may then be stored twice (status says since when).

            Exit codes: 0 nothing was damaged; 65 damage was found (and quarantined \\
            where it could be); 74 the queue is in use or cannot be opened; 78 \\
            configuration error.
            """,
        options: ConfigurationOptions.specs,
        command: RepairCommand.self
    )
    let options: ConfigurationOptions

    init(_ arguments: ParsedArguments) { options = ConfigurationOptions(arguments) }

    func run() throws {
        let configuration = try loadAgentConfiguration(options)
        let repair: QueueRepair
        do {
            repair = try DurableQueue.repair(
                configuration.queueConfiguration,
                lastKnown: AgentStatus.lastKnownQueueNumbers(statusPath: configuration.statusPath)
            )
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        if let queue = try? DurableQueue.open(configuration.queueConfiguration) {
            refreshStoppedStatus(configuration, queue: queue)
            queue.close()
        }
        printVerification(repair.found, path: configuration.resolvedQueuePath)
        if let copy = repair.damagedFileCopy {
            print("  rebuilt the file from what could be read; the damaged file is kept at \(copy)")
            if repair.schemaRowsRestored > 0 {
                print("  put back the damaged definition of \(repair.schemaRowsRestored) tables")
            }
            if repair.rowsUnreadable > 0 { print("  \(repair.rowsUnreadable) rows could not be read") }
            if !repair.tablesUnreadable.isEmpty {
                print("  unreadable: \(repair.tablesUnreadable.joined(separator: ", ")) (input positions may restart)")
            }
        }
        for damage in repair.quarantined {
            print("  quarantined \(damage.location) (\(damage.records) readings)")
        }
        if repair.gatewayMemoryForgotten > 0 {
            print(
                "  the gateway's received ids or sessions were damaged (\(repair.gatewayMemoryForgotten) rows or tables forgotten): a batch a client sends again within its deduplication window may be stored twice"
            )
        }
        if repair.accountingCorrection > 0 {
            print("  counted \(repair.accountingCorrection) missing readings as dropped (reason damaged)")
        } else if repair.accountingCorrection < 0 {
            print("  counted \(-repair.accountingCorrection) uncounted readings as appended")
        }
        guard repair.found.isIntact else {
            print("repaired: damaged readings are quarantined or counted as dropped (damaged); the rest will upload.")
            throw ExitCodes.dataError
        }
        print("intact: nothing to repair")
    }
}

/// What `verify` and `repair` found, one line per finding.
private func printVerification(_ report: QueueVerification, path: String) {
    print(
        "queue \(path): \(report.segmentsChecked) segments (\(report.recordsChecked) readings) and \(report.deadLettersChecked) dead letters checked"
            + (report.gatewayMemoryRowsChecked > 0
                ? ", \(report.gatewayMemoryRowsChecked) rows of received ids and sessions" : "")
    )
    if report.segmentsWithoutChecksum > 0 {
        print("  \(report.segmentsWithoutChecksum) segments written before checksums: checked by structure only")
    }
    for damage in report.damage {
        print("  damaged: \(damage.location) (\(damage.records) readings): \(damage.problem)")
    }
    for problem in report.fileProblems {
        print("  file: \(problem)")
    }
    if report.accountingGap > 0 {
        print("  counters: \(report.accountingGap) readings counted as queued are missing from the file")
    } else if report.accountingGap < 0 {
        print("  counters: \(-report.accountingGap) readings in the file are not counted as appended")
    }
    if report.quarantinedRecords > 0 {
        print("  quarantined earlier: \(report.quarantinedRecords) readings")
    }
}
