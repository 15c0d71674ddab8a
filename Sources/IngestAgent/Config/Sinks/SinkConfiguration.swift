import EdgeIngestCore

/// One kind of sink as the configuration knows it: its name in
/// `upload.sink`, the `[upload]` keys it reads, how it reads and checks
/// them, what `check-config` says about it, and how the uploader builds it.
///
/// Adding a sink is one type conforming to this, in a file of its own here,
/// plus its entry in ``SinkSettings/kinds``; the sink itself (a
/// ``BatchSink``) lives with the others.
///
/// ```swift
/// struct ExampleSinkConfiguration: SinkConfiguration {
///     static let name = "example"
///     static let ownKeys: Set<String> = ["path"]
///     let path: String
///     static func decode(_ t: TOMLTable, _ decoder: inout ConfigurationDecoder, environment: [String: String]) -> Self? {
///         decoder.string(t["path"], "upload.path").map(Self.init(path:))
///     }
///     func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String { "example \(path)" }
///     func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
///         { [path] in ExampleSink(path: path) }
///     }
/// }
/// ```
protocol SinkConfiguration: Sendable {
    /// `upload.sink`'s value for this sink: `"clickhouse"`.
    static var name: String { get }
    /// Keys of `[upload]` that only this sink (and maybe other sinks, not
    /// all) reads; under another sink they are problems, as they would
    /// silently do nothing.
    static var ownKeys: Set<String> { get }
    /// Whether it delivers over HTTP with libcurl: then it reads every one
    /// of ``SinkSettings/httpKeys`` and needs `upload.url`.
    static var isOverHTTP: Bool { get }
    /// Which of ``SinkSettings/httpKeys`` a sink not over HTTP still reads
    /// (the others are problems); ignored for HTTP sinks.
    static var httpKeysRead: Set<String> { get }
    /// Why the other HTTP keys do nothing under this sink, as a problem
    /// says it: "writes to upload.path".
    static var withoutHTTP: String { get }

    /// Reads this sink's keys from `[upload]`; nil after a problem, which
    /// `decoder` holds.
    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self?
    /// Checks the sink's keys against the rest of the configuration (the
    /// record types its keys name). The default checks nothing.
    func check(_ configuration: AgentConfiguration, upload: TOMLTable, _ decoder: inout ConfigurationDecoder)
    /// `check-config`'s line about the upload, after "upload: ".
    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String
    /// Builds the sink, on the upload thread.
    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory
}

extension SinkConfiguration {
    static var isOverHTTP: Bool { true }
    static var httpKeysRead: Set<String> { [] }
    static var withoutHTTP: String { "" }
    func check(_ configuration: AgentConfiguration, upload: TOMLTable, _ decoder: inout ConfigurationDecoder) {}
}
