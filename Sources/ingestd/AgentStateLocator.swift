import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// Finds the state directory of the agent a command is about (`status`,
/// `queue`, `dead-letter`, `export`, `import`, `reset`, `verify`,
/// `repair`), when neither `--state-directory` nor the configuration names
/// it.
///
/// An agent's state directory then depends on who runs it: the packaged
/// service gets `/var/lib/ingestd` from systemd (`StateDirectory=`), while
/// the same configuration run by hand uses `~/.local/state/ingestd`. So
/// `sudo ingestd status` looks in both and takes the directory whose
/// status file shows a running agent (the newest if several), else the
/// newest status file.
///
/// ```swift
/// let found = AgentStateLocator.find(in: ["/root/.local/state/ingestd", "/var/lib/ingestd"])
/// // found.directory == "/var/lib/ingestd" while the service runs
/// ```
enum AgentStateLocator {
    /// Where the package's service keeps its state (`StateDirectory=ingestd`).
    static let packagedStateDirectory = "/var/lib/ingestd"

    struct Found {
        /// The chosen directory, or nil when none holds a readable status file.
        var directory: String?
        /// Status files that exist but this user cannot read.
        var unreadable: [String] = []
    }

    /// The directories an agent uses when its configuration names none:
    /// `configured` (the default for this user) and the package's.
    static func candidates(configured: String, environment: [String: String]) -> [String] {
        var directories: [String] = []
        let systemd = environment["STATE_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) }
        for directory in [systemd, configured, packagedStateDirectory] {
            if let directory, !directory.isEmpty, !directories.contains(directory) { directories.append(directory) }
        }
        return directories
    }

    static func find(in directories: [String]) -> Found {
        var found = Found()
        var best: (running: Bool, modified: Int)?
        for directory in directories {
            var info = stat()
            let path = directory + "/status.json"
            guard stat(path, &info) == 0 else { continue }
            guard access(path, R_OK) == 0 else {
                found.unreadable.append(path)
                continue
            }
            let key = (running: isRunning(statusPath: path), modified: Int(info.st_mtim.tv_sec))
            if let best, (best.running ? 1 : 0, best.modified) >= (key.running ? 1 : 0, key.modified) { continue }
            best = key
            found.directory = directory
        }
        return found
    }

    /// Whether the status file was written by an agent that still runs.
    private static func isRunning(statusPath: String) -> Bool {
        guard let text = try? readSmallTextFile(statusPath, limit: FileLimits.small),
            let status = try? AgentStatus.decode(text)
        else { return false }
        return status.state != .stopped && kill(status.pid, 0) == 0
    }
}

extension ConfigurationOptions {
    /// The configuration, for a command about an agent's state: when the
    /// state directory is nobody's choice (no `--state-directory`, no
    /// `agent.state_directory`, not under systemd), it is the one
    /// ``AgentStateLocator`` finds, so that `sudo ingestd status` sees the
    /// packaged service and `sudo ingestd dead-letter replay --all` works on
    /// its queue, not on a new empty one in root's home.
    func loadFindingTheAgent(environment: [String: String]) throws -> AgentConfiguration {
        var configuration = try load(environment: environment)
        guard stateDirectory == nil, configuration.stateDirectoryIsDefault else { return configuration }
        let candidates = AgentStateLocator.candidates(
            configured: configuration.stateDirectory,
            environment: environment
        )
        if let directory = AgentStateLocator.find(in: candidates).directory {
            configuration.stateDirectory = directory
        }
        return configuration
    }
}
