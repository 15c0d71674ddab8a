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
    let inputName: String

    init(types: [RecordType], inputName: String) {
        self.types = types
        self.inputName = inputName
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

    /// Decodes `body`; `recordType` is the batch's `EdgeIngest-Record-Type`
    /// (a record's own `_type` wins). A body of more than `maxRecords`
    /// lines (a last line without its newline counts) is refused as soon
    /// as line `maxRecords + 1` is reached, so its cost is bounded.
    func decode(
        _ body: [UInt8],
        recordType: String?,
        maxRecords: Int = .max
    ) throws(TooManyRecords) -> (records: [Record], rejections: [Rejection]) {
        let router = routers[recordType ?? ""] ?? BatchDecoder.router(types, recordType, inputName)
        var parser = NDJSONParser()
        var parsed = ParsedLine()
        var records: [Record] = []
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
                    records.append(try router.route(parsed))
                } catch {
                    rejections.append(Rejection(index: index, reason: error.reason, message: error.message))
                }
                return true
            }
        }
        if tooMany { throw TooManyRecords() }
        return (records, rejections)
    }
}
