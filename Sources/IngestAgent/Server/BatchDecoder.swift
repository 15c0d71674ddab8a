import EdgeIngest

/// Turns the NDJSON body of a batch into records of the declared types and
/// per-record rejections, indexed by line as docs/PROTOCOL.md says (the
/// client dead-letters exactly those records).
struct BatchDecoder {
    struct Rejection: Sendable, Equatable {
        var index: Int
        var reason: String
        var message: String
    }

    private var parser = NDJSONParser()
    private var parsed = ParsedLine()
    private var routers: [String: ReadingRouter] = [:]
    let types: [RecordType]
    let inputName: String

    init(types: [RecordType], inputName: String) {
        self.types = types
        self.inputName = inputName
    }

    /// Decodes `body`; `recordType` is the batch's `EdgeIngest-Record-Type`
    /// (a record's own `_type` wins).
    mutating func decode(_ body: [UInt8], recordType: String?) -> (records: [Record], rejections: [Rejection]) {
        var router = routers[recordType ?? ""] ?? {
            var made = ReadingRouter(types: types, defaultType: recordType, inputName: inputName)
            made.requireID = true
            return made
        }()
        defer { routers[recordType ?? ""] = router }
        var records: [Record] = []
        var rejections: [Rejection] = []
        var index = 0
        var start = 0
        body.withUnsafeBytes { bytes in
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                var line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                if line.last == UInt8(ascii: "\r") { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
                do throws(LineRejection) {
                    if LineFramer.isBlank(line) {
                        throw LineRejection(reason: "empty_record", message: "the line is empty; a batch has one record per line")
                    }
                    try parser.parse(line, into: &parsed)
                    records.append(try router.route(parsed))
                } catch {
                    if error.reason == "missing_type", let recordType, !types.contains(where: { $0.name == recordType }) {
                        let declared = types.map(\.name).joined(separator: ", ")
                        rejections.append(Rejection(
                            index: index, reason: "unknown_type",
                            message: "the batch's EdgeIngest-Record-Type \(quoted(recordType)) is not declared here (declared: \(declared))"
                        ))
                    } else {
                        rejections.append(Rejection(index: index, reason: error.reason, message: error.message))
                    }
                }
                index += 1
                start = end + 1
            }
        }
        return (records, rejections)
    }
}
