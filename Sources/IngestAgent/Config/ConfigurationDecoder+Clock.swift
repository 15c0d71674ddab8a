import EdgeIngestCore

/// `[clock]` (how the agent knows the wall clock is synchronised) and
/// `[delivery.TYPE]` (what each type's records carry of their acceptance
/// time, whether they wait for a synchronised clock, their priority, drain
/// order and maximum age): docs/QUEUE.md, "Boxes without a real-time
/// clock" and "Priority and age".
extension ConfigurationDecoder {
    static let clockKeys: Set<String> = ["synchronised_file", "assume_synchronised"]
    static let deliveryKeys: Set<String> = [
        "accepted_at_field", "clock_field", "hold_unsynchronised", "priority", "drain_order", "max_age_s", "share",
    ]

    /// `[clock]`: `synchronised_file` (the clock counts as synchronised
    /// exactly while this file exists) or `assume_synchronised = true` (it
    /// always is: a battery-backed clock, a VM whose host keeps the time);
    /// without either, the kernel's NTP status and systemd-timesyncd's flag.
    mutating func decodeClock(_ t: TOMLTable?) -> ClockSynchronisation.Source {
        guard let t else { return .automatic }
        rejectUnknown(t, known: Self.clockKeys, prefix: "clock.")
        var source = ClockSynchronisation.Source.automatic
        if let v = t["synchronised_file"], let path = string(v, "clock.synchronised_file") {
            if path.hasPrefix("/") {
                source = .flagFile(path)
            } else {
                problem(v, "clock.synchronised_file", "must be an absolute path, e.g. \"/run/gps/synchronised\"")
            }
        }
        if let v = t["assume_synchronised"], bool(v, "clock.assume_synchronised") == true {
            if case .flagFile = source {
                problem(
                    v,
                    "clock.assume_synchronised",
                    "and clock.synchronised_file both say where the state comes from: keep one"
                )
            }
            source = .always
        }
        return source
    }

    /// `[delivery.TYPE]` for declared types: the acceptance fields, and
    /// the order and age settings.
    mutating func decodeDelivery(
        _ value: TOMLValue?,
        types: [RecordType]
    ) -> (stamps: [String: AcceptanceStamping], delivery: [String: TypeDelivery]) {
        guard let value else { return ([:], [:]) }
        guard case .table(let table) = value.kind else {
            problem(value, "delivery", "must be a table per record type ([delivery.NAME])")
            return ([:], [:])
        }
        var stamps: [String: AcceptanceStamping] = [:]
        var deliveries: [String: TypeDelivery] = [:]
        for entry in table.entries {
            let key = "delivery.\(entry.key)"
            guard case .table(let t) = entry.value.kind else {
                problem(entry.value, key, "must be a table: [\(key)] then its keys")
                continue
            }
            rejectUnknown(t, known: Self.deliveryKeys, prefix: key + ".", line: entry.value.line)
            guard let type = types.first(where: { $0.name == entry.key }) else {
                problem(
                    entry.value,
                    key,
                    "names no declared record type\(Suggestion.phrase(for: entry.key, among: Set(types.map(\.name)))): declare [types.\(entry.key)] or fix the name"
                )
                continue
            }
            var stamping = AcceptanceStamping()
            stamping.timeField = fieldName(t["accepted_at_field"], key + ".accepted_at_field", type: type)
            stamping.clockField = fieldName(t["clock_field"], key + ".clock_field", type: type)
            if let a = stamping.timeField, a == stamping.clockField {
                problem(t["clock_field"], key + ".clock_field", "must differ from accepted_at_field (\"\(a)\")")
            }
            if let v = t["hold_unsynchronised"] {
                stamping.holdUnsynchronised = bool(v, key + ".hold_unsynchronised") ?? false
            }
            if stamping.timeField != nil || stamping.clockField != nil || stamping.holdUnsynchronised {
                stamps[type.name] = stamping
            }
            var delivery = TypeDelivery()
            if let v = t["priority"], let n = integer(v, key + ".priority", min: -1_000_000) {
                if n > 1_000_000 {
                    problem(v, key + ".priority", "must be at most 1000000, got \(n)")
                } else {
                    delivery.priority = Int(n)
                }
            }
            if let order = choice(
                t["drain_order"],
                key + ".drain_order",
                "oldest_first or newest_first",
                choices: DrainOrder.allCases.map(\.rawValue),
                DrainOrder.init(rawValue:)
            ) {
                delivery.drainOrder = order
            }
            if let v = t["max_age_s"], let n = integer(v, key + ".max_age_s", min: 1) {
                delivery.maxAgeMilliseconds = n > Int64.max / 1_000 ? nil : n * 1_000
            }
            if let v = t["share"] {
                switch v.kind {
                case .float(let d) where d > 0 && d <= 1: delivery.share = d
                case .integer(1): delivery.share = 1
                default:
                    problem(v, key + ".share", "must be a part of queue.max_bytes above 0 and at most 1, e.g. 0.25")
                }
            }
            if delivery != TypeDelivery() { deliveries[type.name] = delivery }
        }
        return (stamps, deliveries)
    }

    /// A field name the agent adds: not one the type declares, not `_id`,
    /// nothing that needs escaping in JSON.
    private mutating func fieldName(_ value: TOMLValue?, _ key: String, type: RecordType) -> String? {
        guard let value, let name = string(value, key) else { return nil }
        if name.isEmpty || !name.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C }) {
            problem(value, key, "must be a field name without quotes, backslashes or control characters")
            return nil
        }
        if name == RecordType.primaryKey || name == RecordType.typeField || type.fieldIndex(named: name) != nil {
            problem(
                value,
                key,
                "\"\(name)\" is already a field of \(type.name): the agent adds this field itself, so give it a name of its own"
            )
            return nil
        }
        return name
    }
}
