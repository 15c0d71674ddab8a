import EdgeIngestCore

/// Turns the NDJSON body of a batch into records of the declared types and
/// per-record rejections, indexed by line as docs/PROTOCOL.md says (the
/// client dead-letters exactly those records).
struct BatchDecoder: Sendable {
    struct Rejection: Sendable, Equatable {
        var index: Int
        var reason: String
        var message: String
    }

    /// One router per declared type (the batch's `EdgeIngest-Record-Type`)
    /// and one for batches that name none, made once.
    private let routers: [String: ReadingRouter]
    let types: [RecordType]
    /// The declared types by name, as ``EncodedBatch`` checks them.
    let typesByName: [String: RecordType]
    let inputName: String

    init(types: [RecordType], inputName: String) {
        self.types = types
        self.inputName = inputName
        typesByName = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
        routers = Dictionary(
            uniqueKeysWithValues: ([nil] + types.map(\.name)).map {
                ($0 ?? "", BatchDecoder.router(types, $0, inputName))
            }
        )
    }

    private static func router(_ types: [RecordType], _ recordType: String?, _ inputName: String) -> ReadingRouter {
        var router = ReadingRouter(
            types: types,
            defaultType: recordType,
            inputName: inputName,
            defaultTypeOrigin: "the batch's EdgeIngest-Record-Type"
        )
        router.requireID = true
        return router
    }

    /// More lines than the batch may hold: nothing was decoded past the limit.
    struct TooManyRecords: Error {}

    /// Decodes `body` into records; `recordType` is the batch's
    /// `EdgeIngest-Record-Type` (a record's own `_type` wins). A body of
    /// more than `maxRecords` lines (a last line without its newline
    /// counts) is refused as soon as line `maxRecords + 1` is reached, so
    /// its cost is bounded. For a server that edits records before storing
    /// them (`owner_field`); others take ``encode(_:recordType:maxRecords:)``.
    func decode(
        _ body: [UInt8],
        recordType: String?,
        maxRecords: Int = .max
    ) throws(TooManyRecords) -> (records: [Record], rejections: [Rejection]) {
        let router = router(for: recordType)
        var records: [Record] = []
        let rejections = try eachLine(of: body, maxRecords: maxRecords) { line throws(LineRejection) in
            records.append(try router.route(line))
        }
        return (records, rejections)
    }

    /// Decodes `body` as ``decode(_:recordType:maxRecords:)`` does, straight
    /// into the queue's encoding: a line that already is its record's JSON
    /// is stored as read (byte for byte what encoding the decoded record
    /// stores, so a record's content checksum does not depend on the path),
    /// without a ``Record`` per line.
    func encode(
        _ body: [UInt8],
        recordType: String?,
        maxRecords: Int = .max
    ) throws(TooManyRecords) -> (batch: EncodedBatch, rejections: [Rejection]) {
        var router = router(for: recordType)
        // Room for about the body's bytes (~160 B a line): allocated once.
        var batch = EncodedBatch(expectedRecords: min(maxRecords, body.count / 160 + 1))
        let rejections = try eachLine(of: body, maxRecords: maxRecords) { line throws(LineRejection) in
            try router.route(line, into: &batch)
        }
        return (batch, rejections)
    }

    private func router(for recordType: String?) -> ReadingRouter {
        routers[recordType ?? ""] ?? BatchDecoder.router(types, recordType, inputName)
    }

    /// Parses each line of `body` and hands it to `handle`; the lines that
    /// fail to parse or that `handle` refuses, by index.
    private func eachLine(
        of body: [UInt8],
        maxRecords: Int,
        _ handle: (ParsedLine) throws(LineRejection) -> Void
    ) throws(TooManyRecords) -> [Rejection] {
        var parser = NDJSONParser()
        var parsed = ParsedLine()
        var rejections: [Rejection] = []
        var tooMany = false
        body.withUnsafeBytes { bytes in
            forEachLine(in: bytes) { index, raw in
                if index == maxRecords {
                    tooMany = true
                    return false
                }
                var line = raw
                if line.last == UInt8(ascii: "\r") { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
                do throws(LineRejection) {
                    if LineFramer.isBlank(line) {
                        throw LineRejection(
                            reason: "empty_record",
                            message: "the line is empty; a batch has one record per line"
                        )
                    }
                    try parser.parse(line, into: &parsed)
                    try handle(parsed)
                } catch {
                    rejections.append(Rejection(index: index, reason: error.reason, message: error.message))
                }
                return true
            }
        }
        if tooMany { throw TooManyRecords() }
        return rejections
    }
}
