/// Turns queued records (flat JSON objects) into InfluxDB line protocol,
/// one point per record:
///
///     WeatherSensor,deviceId=WX1278UIT barometricPressureInHg=29.65,temperatureInFahrenheit=66.7,windSpeedInMph=3i 1763719315120000000
///
/// - the measurement: `measurement`, else the record type's name;
/// - tags: the fields named in `tags` (sorted by key, as InfluxDB prefers);
///   a null or empty value leaves the tag out;
/// - fields: every other declared field, by its declared type: int → `3i`,
///   double → `66.7`, bool → `true`, string and objectId → `"text"`, a
///   timestamp other than the point's time → integer milliseconds (`…i`);
///   `_id` is not sent (these engines key a point by series + time);
/// - the time (nanoseconds): the record's timestamp field — `timestamp`
///   when the type declares it, else the type's first timestamp field.
///   These engines keep one point per series and time, so the time must be
///   the reading's own: there is no fallback to the `_id` (its time is
///   exact to the second only, and ids made in one second by different
///   agents, or by one agent faster than the engine's precision, would
///   share a time and collapse into one point). A type without a timestamp
///   field has no encoder time (``timestampField`` is nil: the sink holds;
///   the agent's configuration refuses it), and a record whose timestamp
///   field is null or missing is refused alone.
///
/// A record that cannot be a valid point (no field left once tags are
/// taken out; a newline in a value, which line protocol cannot carry) is
/// refused alone, with its index, and goes to the dead-letter table; so is
/// one whose time line protocol cannot hold (before 1677 or after 2262) or
/// whose tag value ends with a backslash (it would escape the separator).
package struct LineProtocolEncoder {
    let measurement: [UInt8]
    let tags: Set<String>
    /// The field that gives each point its time; nil when the type declares
    /// no timestamp field (no record of it can be a point).
    let timestampField: String?
    let types: [String: FieldType]
    private var parser = NDJSONParser()
    private var parsed = ParsedLine()

    init(type: RecordType, measurement: String?, tags: [String], timestamp: String?) {
        self.measurement = Self.escaped(Array((measurement ?? type.name).utf8), special: [0x2C, 0x20])
        self.tags = Set(tags)
        self.types = Dictionary(type.fields.map { ($0.name, $0.type) }, uniquingKeysWith: { first, _ in first })
        self.timestampField = Self.timeField(of: type, preferring: timestamp)
    }

    /// The field whose value is a point's time for records of `type`:
    /// `preferred` when `type` declares it as a timestamp, else the type's
    /// first timestamp field; nil when it declares none.
    package static func timeField(of type: RecordType, preferring preferred: String?) -> String? {
        let timestamps = type.fields.filter { $0.type == .timestamp }.map(\.name)
        if let preferred, timestamps.contains(preferred) { return preferred }
        return timestamps.first
    }

    struct Refusal: Error { var reason: String }

    /// Appends the point for one queued JSON line to `out`, or throws
    /// without appending anything.
    mutating func encode(_ line: UnsafeRawBufferPointer, into out: inout [UInt8]) throws(Refusal) {
        do { try parser.parse(line, into: &parsed) } catch {
            throw Refusal(reason: "the queued record is not a JSON object")
        }
        var tagParts: [(String, [UInt8])] = []
        var fieldPart: [UInt8] = []
        var time: Int64?
        for field in parsed.fields {
            let key = parsed.keyString(field)
            let value: RawFieldValue
            do { value = try parsed.value(field) } catch {
                throw Refusal(reason: "the queued record is not a JSON object")
            }
            // Not sent: these engines key a point by series + time.
            if key == RecordType.primaryKey { continue }
            if case .null = value { continue }
            let declared = types[key]
            if key == timestampField {
                time = try Self.nanoseconds(value, key: key)
                continue
            }
            if tags.contains(key) {
                let text = Self.tagText(value)
                guard !text.contains(0x0A), !text.contains(0x0D) else {
                    throw Refusal(reason: "tag '\(key)' holds a newline, which line protocol cannot carry")
                }
                // A trailing backslash would escape the separator after it.
                guard text.last != 0x5C else {
                    throw Refusal(reason: "tag '\(key)' ends with a backslash, which line protocol cannot carry")
                }
                if !text.isEmpty { tagParts.append((key, Self.escaped(text, special: [0x2C, 0x3D, 0x20]))) }
                continue
            }
            guard let encoded = try Self.fieldValue(value, declared: declared, key: key) else { continue }
            if !fieldPart.isEmpty { fieldPart.append(0x2C) }
            fieldPart += Self.escaped(Array(key.utf8), special: [0x2C, 0x3D, 0x20])
            fieldPart.append(0x3D)
            fieldPart += encoded
        }
        guard !fieldPart.isEmpty else {
            throw Refusal(reason: "no field left once the tags are taken out: a point needs at least one")
        }
        guard let nanoseconds = time else {
            throw Refusal(
                reason: "field '\(timestampField ?? "")' has no value: a point needs the reading's own time"
            )
        }
        out += measurement
        for (key, value) in tagParts.sorted(by: { $0.0 < $1.0 }) {
            out.append(0x2C)
            out += Self.escaped(Array(key.utf8), special: [0x2C, 0x3D, 0x20])
            out.append(0x3D)
            out += value
        }
        out.append(0x20)
        out += fieldPart
        out.append(0x20)
        out += Array(String(nanoseconds).utf8)
        out.append(0x0A)
    }

    /// A timestamp field's value as line protocol's nanoseconds since the
    /// epoch, which reach from 1677 to 2262.
    static func nanoseconds(_ value: RawFieldValue, key: String) throws(Refusal) -> Int64 {
        guard let ms = milliseconds(value) else {
            throw Refusal(reason: "field '\(key)' is not an ISO 8601 time line protocol can carry")
        }
        let (ns, overflow) = ms.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else {
            throw Refusal(reason: "field '\(key)' is outside 1677–2262, the range of line protocol's nanosecond times")
        }
        return ns
    }

    // The values come from NDJSONParser over queued records: null, bool,
    // int, double or string (timestamps are ISO 8601 text, objectIds hex).

    static func milliseconds(_ value: RawFieldValue) -> Int64? {
        guard case .string(let text) = value else { return nil }
        return Timestamp.parseISO8601(text)
    }

    static func tagText(_ value: RawFieldValue) -> [UInt8] {
        switch value {
        case .string(let text): return Array(text.utf8)
        case .int(let n): return Array(String(n).utf8)
        case .double(let d): return Array(String(d).utf8)
        case .bool(let b): return Array((b ? "true" : "false").utf8)
        default: return []
        }
    }

    /// A field value by the field's declared type (the queued JSON number
    /// `30` of a double field is still sent as a float).
    static func fieldValue(_ value: RawFieldValue, declared: FieldType?, key: String) throws(Refusal) -> [UInt8]? {
        switch value {
        case .int(let n):
            return Array((declared == .double ? String(Double(n)) : "\(n)i").utf8)
        case .double(let d):
            // An int field's value is an integer (validated); a fraction here would be a damaged record.
            if declared == .int {
                guard let n = Int64(exactly: d) else {
                    throw Refusal(reason: "field '\(key)' is declared int but holds \(d)")
                }
                return Array("\(n)i".utf8)
            }
            return Array(String(d).utf8)
        case .bool(let b):
            return Array((b ? "true" : "false").utf8)
        case .string(let text):
            if declared == .timestamp {
                guard let ms = Timestamp.parseISO8601(text) else {
                    throw Refusal(reason: "field '\(key)' is not an ISO 8601 time line protocol can carry")
                }
                return Array("\(ms)i".utf8)
            }
            guard !text.utf8.contains(0x0A), !text.utf8.contains(0x0D) else {
                throw Refusal(reason: "field '\(key)' holds a newline, which line protocol cannot carry")
            }
            return [0x22] + escaped(Array(text.utf8), special: [0x22, 0x5C]) + [0x22]
        default:
            return nil
        }
    }

    /// `bytes` with a backslash before each byte in `special`.
    static func escaped(_ bytes: [UInt8], special: Set<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for b in bytes {
            if special.contains(b) { out.append(0x5C) }
            out.append(b)
        }
        return out
    }
}
