import EdgeIngestCore

/// `sink = "sqlite"`: a table per record type in the SQLite file at
/// `upload.path` (relative: in the state directory), the embedded backend.
struct SQLiteSinkConfiguration: SinkConfiguration {
    static let name = "sqlite"
    static let ownKeys: Set<String> = ["path"]
    static let isOverHTTP = false
    static let withoutHTTP = "writes to upload.path"

    /// As written in `upload.path`.
    let path: String

    /// The file: `path`, relative to the state directory unless absolute.
    func resolvedPath(stateDirectory: String) -> String {
        path.hasPrefix("/") ? path : stateDirectory + "/" + path
    }

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        decoder.requiredString(
            upload,
            "path",
            sink: name,
            what: "the archive file, e.g. \"/var/lib/ingestd/archive.sqlite\""
        )
        .map(Self.init(path:))
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        "SQLite archive \(resolvedPath(stateDirectory: configuration.stateDirectory)), \(upload.maxRecords) records per batch"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let path = resolvedPath(stateDirectory: configuration.stateDirectory)
        let types = configuration.deliveredTypes
        // A gateway's owner field keys the tables with _id (tenants may share _ids).
        let ownerField = configuration.inputs.lazy.compactMap(\.http?.ownerField).first
        return { SQLiteArchiveSink(path: path, types: types, ownerField: ownerField) }
    }
}
