/// Reads a few members of a stored record line (a flat JSON object, as the
/// queue's writer makes it) without building the whole value: the MQTT sink
/// needs only the `_id` and the topic's fields of each record.
///
/// Values come back as text: a string's characters, a number's or boolean's
/// literal; `null` is absent. Anything the scan does not expect (an escape
/// in a wanted string, a nested value, malformed JSON) gives nil, and the
/// caller parses the line in full instead.
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
        func skipSpace() { while i < n, line[i] == 0x20 || line[i] == 0x09 || line[i] == 0x0D { i += 1 } }
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
                while i < n, line[i] != comma, line[i] != close, line[i] != 0x20 { i += 1 }
                guard i > start, line[start] != UInt8(ascii: "{"), line[start] != UInt8(ascii: "[") else { return nil }
                let literal = start..<i
                if let wantedIndex, !equal(literal, Array("null".utf8)) {
                    out[wanted[wantedIndex]] = String(
                        decoding: UnsafeRawBufferPointer(rebasing: line[literal]),
                        as: UTF8.self
                    )
                }
            }
            skipSpace()
            guard i < n else { return nil }
            if line[i] == comma {
                i += 1
                continue
            }
            return line[i] == close ? out : nil
        }
    }
}
