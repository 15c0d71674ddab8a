import EdgeIngestCore

/// The fields of one parsed line: key bytes in a shared scratch buffer and
/// raw values. Reused from line to line, so parsing allocates only for
/// string values longer than Swift's small-string size.
struct ParsedLine {
    struct Field {
        var keyStart: Int
        var keyCount: Int
        var value: RawFieldValue
    }
    var keys: [UInt8] = []
    var fields: [Field] = []

    mutating func removeAll() {
        keys.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    func withKey<R>(_ field: Field, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try keys.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[field.keyStart..<field.keyStart + field.keyCount])) }
    }

    func keyString(_ field: Field) -> String {
        String(decoding: keys[field.keyStart..<field.keyStart + field.keyCount], as: UTF8.self)
    }
}
