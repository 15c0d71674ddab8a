import EdgeIngestCore
import IngestAgent

struct CheckConfigCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "check-config",
        abstract: "Check a configuration file and report every problem with its line and key.",
        discussion: "Exits 0 when the file is valid, 78 when it has problems (all listed on stderr).",
        options: ConfigurationOptions.specs,
        command: CheckConfigCommand.self
    )

    let options: ConfigurationOptions

    init(_ arguments: ParsedArguments) {
        options = ConfigurationOptions(arguments)
    }

    func run() throws {
        let environment = processEnvironment()
        let path = options.resolvedPath(environment: environment)
        do {
            let configuration = try options.load(environment: environment)
            print("\(path): OK")
            print("  record types: " + configuration.types.map(\.description).joined(separator: ", "))
            print("  inputs: " + configuration.inputs.map { "\($0.name) (\($0.format.rawValue), type \($0.type ?? "from _type"))" }.joined(separator: ", "))
            print("  queue: \(configuration.resolvedQueuePath), overflow \(configuration.overflowPolicy), durability \(configuration.durability)")
            if let upload = configuration.upload, let archive = configuration.resolvedArchivePath {
                print("  upload: SQLite archive \(archive), \(upload.maxRecords) records per batch")
            } else if let upload = configuration.upload, case .clickHouse(let database, let table, let token) = configuration.sink {
                let target = (database.map { $0 + "." } ?? "") + (table ?? "<record type>")
                print("  upload: ClickHouse \(upload.http.displayURL) into \(target), \(upload.maxRecords) records per batch, gzip \(upload.http.gzip), deduplication token \(token ? "sent" : "off")")
            } else if let upload = configuration.upload, case .lineProtocol(let measurement, let tags, let timestamp) = configuration.sink {
                print("  upload: line protocol \(upload.http.displayURL), measurement \(measurement ?? "<record type>"), tags [\(tags.joined(separator: ", "))], time from \(timestamp ?? "the first timestamp field, else _id"), \(upload.maxRecords) records per batch")
            } else if let upload = configuration.upload, case .postgreSQL(let settings) = configuration.sink {
                let target = (settings.schema.map { $0 + "." } ?? "") + (settings.table ?? "<record type>")
                print("  upload: \(settings) into \(target), \(upload.maxRecords) records per batch, password \(settings.password != nil ? "set" : redactedURL(settings.url) != settings.url ? "in url" : "from libpq's defaults")")
            } else if let upload = configuration.upload {
                print("  upload: \(upload.http.displayURL), \(upload.maxRecords) records per batch, gzip \(upload.http.gzip), token \(upload.http.bearerToken == nil ? "none" : "set")")
            } else {
                print("  upload: none (readings stay queued)")
            }
        } catch {
            printError("\(error)")
            throw ExitCodes.configError
        }
    }
}
