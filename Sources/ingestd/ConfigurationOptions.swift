import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// Options every subcommand that reads the configuration shares.
struct ConfigurationOptions: Sendable {
    static let config = Option<String>("config", "file", help: "The configuration file (TOML).")
    static let stateDirectoryOption = Option<String>(
        "state-directory",
        "dir",
        help: "Overrides agent.state_directory: where the queue and status file live."
    )
    static let specs: [OptionSpec] = [config.spec, stateDirectoryOption.spec]

    var configPath: String?
    var stateDirectory: String?

    init(_ arguments: ParsedArguments) {
        configPath = arguments[Self.config]
        stateDirectory = arguments[Self.stateDirectoryOption]
    }

    /// The file used: --config, else $CONFIGURATION_DIRECTORY/ingestd.toml, else /etc/ingestd/ingestd.toml.
    func resolvedPath(environment: [String: String]) -> String {
        if let configPath { return configPath }
        if let dir = environment["CONFIGURATION_DIRECTORY"], !dir.isEmpty {
            return String(dir.split(separator: ":").first!) + "/ingestd.toml"
        }
        return "/etc/ingestd/ingestd.toml"
    }

    func load(environment: [String: String]) throws -> AgentConfiguration {
        var configuration = try AgentConfiguration.load(
            path: resolvedPath(environment: environment),
            environment: environment
        )
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        return configuration
    }
}

func processEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
        let text = String(cString: entry)
        if let eq = text.firstIndex(of: "=") {
            result[String(text[..<eq])] = String(text[text.index(after: eq)...])
        }
        pointer += 1
    }
    return result
}
