import ArgumentParser
import EdgeIngest

@main
struct Ingestd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingestd",
        abstract: "Edge telemetry ingest agent.",
        version: EdgeIngestVersion.current
    )
}
