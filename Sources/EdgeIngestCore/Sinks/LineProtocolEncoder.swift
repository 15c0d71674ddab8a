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
/// - the time (nanoseconds): the `timestamp` field, else the type's first
///   timestamp field; a record without one gets its `_id`'s time
///   (``time(of:)``): the ObjectId's second and its counter — unique per
///   record within a second and the same on every re-send, so a re-sent
///   point overwrites itself instead of adding a second one.
///
/// A record that cannot be a valid point (no field left once tags are
/// taken out; a newline in a value, which line protocol cannot carry) is
/// refused alone, with its index, and goes to the dead-letter table; so is
/// one whose time line protocol cannot hold (before 1677 or after 2262) or
/// whose tag value ends with a backslash (it would escape the separator).
struct LineProtocolEncoder {
    let measurement: [UInt8]
    let tags: Set<String>
    let timestampField: String?
    let types: [String: FieldType]
    private var parser = NDJSONParser()
    private var parsed = ParsedLine()

    init(type: RecordType, measurement: String?, tags: [String], timestamp: String?) {
        self.measurement = Self.escaped(Array((measurement ?? type.name).utf8), special: [0x2C, 0x20])
        self.tags = Set(tags)
        self.types = Dictionary(type.fields.map { ($0.name, $0.type) }, uniquingKeysWith: { first, _ in first })
        self.timestampField = timestamp ?? type.fields.first { $0.type == .timestamp }?.name
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
        var idTime: Int64?
        for field in parsed.fields {
            let key = parsed.keyString(field)
            let value: RawFieldValue
            do { value = try parsed.value(field) } catch {
                throw Refusal(reason: "the queued record is not a JSON object")
            }
            if key == RecordType.primaryKey {
                if case .string(var hex) = value,
                    let id = hex.withUTF8({ ObjectId(hexUTF8: UnsafeRawBufferPointer($0)) })
                {
                    idTime = Self.time(of: id)
                }
                continue
            }
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
        guard let nanoseconds = time ?? idTime else {
            throw Refusal(reason: "no time: neither a timestamp field nor an ObjectId _id")
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

    /// An ObjectId's time, unique per id within its second and the same on
    /// every re-send: the second, plus the counter's last three decimal
    /// digits as milliseconds (so engines that keep milliseconds, like
    /// VictoriaMetrics, tell up to 1,000 ids of a second apart), plus the
    /// rest of the counter (< 16,778) as nanoseconds.
    static func time(of id: ObjectId) -> Int64 {
        let counter = Int64(id.counter)
        return Int64(id.timestampSeconds) * 1_000_000_000 + counter % 1_000 * 1_000_000 + counter / 1_000
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
