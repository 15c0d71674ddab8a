/// The small, allocation-light JSON writer that encodes records for the
/// queue and the wire. It writes only what records contain: strings,
/// integers, finite doubles, booleans.
package enum JSONWriter {
    /// Appends `string` as a JSON string literal (quoted, escaped).
    package static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            var start = 0
            for (i, c) in bytes.enumerated() where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
                switch c {
                case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
                case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
                case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(c >> 4)], hex[Int(c & 0xF)]])
                }
                start = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    package static func appendInt(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(48)
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch
        withUnsafeMutableBytes(of: &digits) { buf in
            var k = 24
            while magnitude > 0 {
                k -= 1
                buf[k] = UInt8(48 + magnitude % 10)
                magnitude /= 10
            }
            if value < 0 {
                k -= 1
                buf[k] = UInt8(ascii: "-")
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[k...]))
        }
    }

    /// Writes the shortest text that reads back as the same double.
    /// Callers guarantee the value is finite (validation refuses others).
    package static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        // The magnitude check first: Int64(exactly: -2^63) exists, and abs() of it traps.
        if abs(value) < 9_007_199_254_740_992, let i = Int64(exactly: value) {
            appendInt(i, to: &out)
            return
        }
        if appendShortDecimal(value, to: &out) { return }
        out.append(contentsOf: value.description.utf8)
    }

    /// Sensor values usually have a few decimals (66.7, 29.65). For those,
    /// find the fewest decimals k ≤ 6 such that m = value × 10^k is an
    /// integer below 2^53 with m / 10^k == value: both are exact doubles, so
    /// that division is correctly rounded, and a correct parser reads the
    /// text "m × 10^-k" back as the same double. Writes it without
    /// allocating; returns false for other values (the caller falls back to
    /// Swift's shortest round-trip `description`).
    private static func appendShortDecimal(_ value: Double, to out: inout [UInt8]) -> Bool {
        let magnitude = abs(value)
        guard magnitude >= 1e-6, magnitude < 1e9 else { return false }
        var scale = 1.0
        for k in 1...6 {
            scale *= 10
            let m = (magnitude * scale).rounded()
            guard m / scale == magnitude else { continue }
            var digits = Int64(m)
            let unit = Int64(scale)
            if value < 0 { out.append(UInt8(ascii: "-")) }
            appendInt(digits / unit, to: &out)
            out.append(UInt8(ascii: "."))
            digits %= unit
            var divisor = unit / 10
            for _ in 0..<k {
                out.append(UInt8(48 + digits / divisor))
                digits %= divisor
                divisor /= 10
            }
            return true
        }
        return false
    }
}

extension Record {
    /// Appends the record as one line of JSON, without the newline:
    /// `{"_id":"…","deviceId":"WX1278UIT",…}` with fields in declaration
    /// order and absent optional fields left out.
    public func encodeJSON(into out: inout [UInt8]) {
        Record.encodeJSON(type: type, id: id, values: values, into: &out)
    }

    /// Appends one record, given by its parts, as ``encodeJSON(into:)`` does;
    /// a field with a span in `verbatim` is written as that text (which is
    /// what this would write for its value: see ``VerbatimJSON``).
    static func encodeJSON(
        type: RecordType,
        id: ObjectId,
        values: [FieldValue?],
        verbatim: VerbatimFields? = nil,
        into out: inout [UInt8]
    ) {
        out.append(contentsOf: #"{"_id":"#.utf8)
        appendQuotedHex(id, to: &out)
        let keys = type.encodedKeys
        // Verbatim fields not yet written: a run of adjacent ones is one copy.
        var pending = 0..<0
        func writePending() {
            guard !pending.isEmpty, let verbatim else { return }
            verbatim.bytes.withUnsafeBytes { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[pending])) }
            pending = 0..<0
        }
        for i in values.indices {
            if let verbatim, verbatim.spans[i].count > 0 {
                let span = verbatim.spans[i]
                if pending.isEmpty || pending.upperBound != span.start {
                    writePending()
                    pending = span.start..<span.start + span.count
                } else {
                    pending = pending.lowerBound..<span.start + span.count
                }
                continue
            }
            guard let value = values[i] else { continue }
            writePending()
            out.append(contentsOf: keys[i])
            appendValue(value, to: &out)
        }
        writePending()
        out.append(UInt8(ascii: "}"))
    }

    /// One field's value as a record's JSON holds it.
    static func appendValue(_ value: FieldValue, to out: inout [UInt8]) {
        switch value {
        case .string(let s): JSONWriter.appendString(s, to: &out)
        case .int(let n): JSONWriter.appendInt(n, to: &out)
        case .double(let d): JSONWriter.appendDouble(d, to: &out)
        case .bool(let b): out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .timestamp(let ms):
            out.append(UInt8(ascii: "\""))
            Timestamp.appendISO8601(milliseconds: ms, to: &out)
            out.append(UInt8(ascii: "\""))
        case .objectId(let oid): appendQuotedHex(oid, to: &out)
        }
    }

    /// `"<24 hex digits>"`, written in place (no String per id).
    static func appendQuotedHex(_ id: ObjectId, to out: inout [UInt8]) {
        // Written on the stack, appended once (a `repeatElement` append and a
        // mutable view of the array per id showed in issue 22's profile).
        var text: (UInt64, UInt64, UInt64, UInt16) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { buffer in
            buffer[0] = UInt8(ascii: "\"")
            id.writeHex(into: UnsafeMutableRawBufferPointer(rebasing: buffer[1..<25]))
            buffer[25] = UInt8(ascii: "\"")
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<26]))
        }
    }

    /// The record as one line of JSON (see ``encodeJSON(into:)``).
    public var jsonString: String {
        var out: [UInt8] = []
        encodeJSON(into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
