import EdgeIngestCore
import EdgeIngestModel
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

struct StatusCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "status",
        abstract: "Show the agent's state and counters; usable as a health check.",
        discussion: """
            Reads the status file (<state_directory>/status.json) that the running \
            agent rewrites every second while anything changes, every 5 s once idle. \
            Exit codes: 0 running and healthy; \
            1 running but unhealthy (an input makes no progress; uploads are held or \
            refused; the oldest queued reading is older than upload.unhealthy_after_s, \
            300 s by default; or the agent is not responding: its status file has not \
            been rewritten in time, as when it is frozen or its disk is full); \
            3 not running (the last status written is shown).
            """,
        options: ConfigurationOptions.specs + [jsonFlag.spec],
        command: StatusCommand.self
    )
    static let jsonFlag = Flag("json", help: "Print the status as JSON.")

    let options: ConfigurationOptions
    let json: Bool

    init(_ arguments: ParsedArguments) {
        options = ConfigurationOptions(arguments)
        json = arguments[Self.jsonFlag]
    }

    func run() throws {
        let environment = processEnvironment()
        let statusPath: String
        if options.configPath == nil, let stateDirectory = options.stateDirectory {
            statusPath = stateDirectory + "/status.json"
        } else if options.configPath == nil, access(options.resolvedPath(environment: environment), R_OK) != 0 {
            // No configuration to read (a box where only the package's
            // agent runs, as another user): look where agents keep their state.
            let reason = String(cString: strerror(errno))
            statusPath = try Self.findStatus(
                configPath: options.resolvedPath(environment: environment),
                unreadableBecause: reason,
                environment
            )
        } else {
            do {
                statusPath = try options.loadFindingTheAgent(environment: environment).statusPath
            } catch let error as ConfigurationError {
                // A configuration broken since the agent started (a reload
                // was refused) must not hide the running agent's status.
                guard let found = Self.statusPathDespiteProblems(options, environment) else {
                    printError("\(error)")
                    throw ExitCodes.configError
                }
                printError("warning: \(error)")
                statusPath = found
            } catch {
                printError("\(error)")
                throw ExitCodes.configError
            }
        }
        let text: String
        do {
            text = try readSmallTextFile(statusPath, limit: FileLimits.small)
        } catch {
            guard error.isMissing else {
                printError("Cannot read the status file \(error).")
                throw ExitCodes.ioError
            }
            printError("No status at '\(statusPath)': ingestd has not run with this state directory.")
            throw ExitCodes.notRunning
        }
        var status: AgentStatus
        do {
            status = try AgentStatus.decode(text)
        } catch {
            printError("The status file '\(statusPath)' is not readable: \(error).")
            throw ExitCodes.notRunning
        }
        let running = status.state != .stopped && kill(status.pid, 0) == 0
        if !running && status.state != .stopped { status.state = .stopped }
        if running, let stale = Self.staleness(of: status, now: wallClockMilliseconds()) {
            status.state = .notResponding
            status.problem = stale
        }
        if json {
            print(status.json())
        } else {
            printHuman(status, running: running)
        }
        if !running { throw ExitCodes.notRunning }
        if status.state == .error || status.problem != nil { throw ExitCodes.unhealthy }
    }

    /// Why a running agent's status file is too old to trust, or nil: the
    /// agent rewrites it at least every `refresh_ms`, so one older than
    /// twice that (and 5 s) means the agent is frozen, or cannot write its
    /// state directory.
    static func staleness(of status: AgentStatus, now: Int64) -> String? {
        guard let updated = Timestamp.parseISO8601(status.updatedAt) else { return nil }
        let refresh = status.refreshMilliseconds ?? Int64(5_000)
        let age = now - updated
        guard age > 2 * refresh + 5_000 else { return nil }
        return
            "not responding: the status file was last written \(age / 1000) s ago (the agent rewrites it at least every \(max(1, refresh / 1000)) s); the agent is frozen (stopped with SIGSTOP? hung?) or cannot write its state directory (a full disk? see its log)"
    }

    /// The status file when the configuration has problems: in its
    /// `agent.state_directory` if the file still parses and names one, else
    /// where agents keep their state by default (``AgentStateLocator``);
    /// nil when there is none.
    static func statusPathDespiteProblems(_ options: ConfigurationOptions, _ environment: [String: String]) -> String? {
        let path = options.resolvedPath(environment: environment)
        let directories =
            AgentConfiguration.stateDirectoryNamed(inFile: path).map { [$0] }
            ?? AgentStateLocator.candidates(
                configured: AgentConfiguration.defaultStateDirectory(environment: environment),
                environment: environment
            )
        return AgentStateLocator.find(in: directories).directory.map { $0 + "/status.json" }
    }

    /// The status file of the agent among the state directories agents use
    /// without a configuration saying otherwise (``AgentStateLocator``):
    /// systemd's `$STATE_DIRECTORY`, the user's (`$XDG_STATE_HOME/ingestd`,
    /// `~/.local/state/ingestd`) and the package's /var/lib/ingestd.
    static func findStatus(
        configPath: String,
        unreadableBecause reason: String,
        _ environment: [String: String]
    ) throws -> String {
        let directories = AgentStateLocator.candidates(
            configured: AgentConfiguration.defaultStateDirectory(environment: environment),
            environment: environment
        )
        let found = AgentStateLocator.find(in: directories)
        if let directory = found.directory { return directory + "/status.json" }
        if let path = found.unreadable.first {
            printError(
                "The status file '\(path)' is not readable by this user: run `ingestd status` as the agent's user or with sudo."
            )
            throw ExitCodes.ioError
        }
        printError(
            "No configuration at '\(configPath)' (\(reason)) and no status file in "
                + directories.joined(separator: ", ")
                + ": pass --config FILE (the agent's configuration) or --state-directory DIR (its state directory)."
        )
        throw ExitCodes.notRunning
    }

    private func printHuman(_ s: AgentStatus, running: Bool) {
        print("ingestd: \(running ? "running (pid \(s.pid))" : "not running"), state \(s.state), as of \(s.updatedAt)")
        for line in s.textLines { print(line) }
    }
}
