/// Reads a few members of a stored record line (a flat JSON object, as the
/// queue's writer makes it) without building the whole value: the MQTT sink
/// needs only the `_id` and the topic's fields of each record.
///
/// Values come back as text: a string's characters, an integer's or
/// boolean's literal; `null` is absent. Anything the scan does not expect
/// (an escape in any string, a wanted fraction or exponent, a nested value,
/// malformed JSON) gives nil, and the caller parses the line in full
/// instead — so the text is always what the full parse gives.
///
/// ```swift
/// let values = FlatRecordScan.values(line, wanted: ["_id", "deviceId"])   // ["_id": "6740…", "deviceId": "WX1"]
/// ```
enum FlatRecordScan {
    static func values(_ line: UnsafeRawBufferPointer, wanted: [String]) -> [String: String]? {
        let names = wanted.map { Array($0.utf8) }
        var out: [String: String] = [:]
        var i = 0
        let n = line.count
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let close = UInt8(ascii: "}")
        func skipSpace() {
            while i < n, line[i] == 0x20 || line[i] == 0x09 || line[i] == 0x0D || line[i] == 0x0A { i += 1 }
        }
        /// The bytes of a string at `i` (past its quotes), or nil if it has an escape or no end.
        func string() -> Range<Int>? {
            guard i < n, line[i] == quote else { return nil }
            let start = i + 1
            var j = start
            while j < n, line[j] != quote {
                if line[j] == UInt8(ascii: "\\") { return nil }
                j += 1
            }
            guard j < n else { return nil }
            i = j + 1
            return start..<j
        }
        func equal(_ range: Range<Int>, _ name: [UInt8]) -> Bool {
            guard range.count == name.count else { return false }
            for (k, byte) in zip(range, name) where line[k] != byte { return false }
            return true
        }
        /// `-?[0-9]+`, no leading zero: written back the same by any parser.
        func isInteger(_ range: Range<Int>) -> Bool {
            var k = range.lowerBound
            if k < range.upperBound, line[k] == UInt8(ascii: "-") { k += 1 }
            guard k < range.upperBound else { return false }
            if line[k] == UInt8(ascii: "0") { return k + 1 == range.upperBound }
            return (k..<range.upperBound).allSatisfy { line[$0] >= UInt8(ascii: "0") && line[$0] <= UInt8(ascii: "9") }
        }
        /// The characters of a JSON number (checked by the parser when wanted).
        func isNumber(_ range: Range<Int>) -> Bool {
            !range.isEmpty
                && range.allSatisfy {
                    let c = line[$0]
                    return (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-")
                        || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") || c == UInt8(ascii: "e")
                        || c == UInt8(ascii: "E")
                }
        }
        skipSpace()
        guard i < n, line[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        skipSpace()
        if i < n, line[i] == close { return out }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard i < n, line[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            skipSpace()
            guard i < n else { return nil }
            let wantedIndex = names.firstIndex { equal(key, $0) }
            if line[i] == quote {
                guard let value = string() else { return nil }
                if let wantedIndex {
                    out[wanted[wantedIndex]] = String(
                        decoding: UnsafeRawBufferPointer(rebasing: line[value]),
                        as: UTF8.self
                    )
                }
            } else {
                let start = i
                while i < n, line[i] != comma, line[i] != close, line[i] > 0x20 { i += 1 }
                let literal = start..<i
                if equal(literal, Array("null".utf8)) {
                    // absent
                } else if equal(literal, Array("true".utf8)) || equal(literal, Array("false".utf8))
                    || isInteger(literal)
                {
                    if let wantedIndex {
                        out[wanted[wantedIndex]] = String(
                            decoding: UnsafeRawBufferPointer(rebasing: line[literal]),
                            as: UTF8.self
                        )
                    }
                } else if wantedIndex != nil || !isNumber(literal) {
                    // A wanted fraction or exponent is formatted as the parser
                    // does (1.50 → 1.5); anything else is not a JSON literal.
                    return nil
                }
            }
            skipSpace()
            guard i < n else { return nil }
            if line[i] == comma {
                i += 1
                continue
            }
            guard line[i] == close else { return nil }
            i += 1
            skipSpace()
            return i == n ? out : nil  // nothing after the object
        }
    }
}
