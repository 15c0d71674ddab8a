import EdgeIngestCore
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
            1 running but unhealthy (an input makes no progress, or the state is error); \
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
        } else {
            do {
                statusPath = try options.load(environment: environment).statusPath
            } catch {
                printError("\(error)")
                throw ExitCodes.configError
            }
        }
        guard let text = readFileBytes(statusPath).map({ String(decoding: $0, as: UTF8.self) }) else {
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
        let running = status.state != "stopped" && kill(status.pid, 0) == 0
        if !running && status.state != "stopped" { status.state = "stopped" }
        if json {
            print(status.json())
        } else {
            printHuman(status, running: running)
        }
        if !running { throw ExitCodes.notRunning }
        if status.state == "error" || status.problem != nil { throw ExitCodes.unhealthy }
    }

    private func printHuman(_ s: AgentStatus, running: Bool) {
        print("ingestd: \(running ? "running (pid \(s.pid))" : "not running"), state \(s.state), as of \(s.updatedAt)")
        for line in s.textLines { print(line) }
    }
}
