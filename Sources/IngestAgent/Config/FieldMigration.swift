import EdgeIngestCore

/// One `[[migrations]]` entry: how records written before `schemaVersion`
/// change to reach it — renamed fields, dropped fields, defaults for fields
/// they lack. Applied in order of version when the queue is opened with a
/// higher `queue.schema_version` (docs/QUEUE.md, "Schema versions").
package struct FieldMigration: Sendable, Hashable {
    /// Records older than this version are changed.
    package var schemaVersion: Int64
    /// Only records of this type; nil for every type.
    package var type: String?
    /// Old field name → new field name.
    package var rename: [String: String] = [:]
    /// Fields removed.
    package var drop: [String] = []
    /// Values for fields a record lacks.
    package var defaults: [String: RawFieldValue] = [:]

    package init(schemaVersion: Int64) { self.schemaVersion = schemaVersion }

    /// The migration block these steps make.
    static func block(_ steps: [FieldMigration]) -> MigrationBlock {
        let ordered = steps.sorted { $0.schemaVersion < $1.schemaVersion }
        return { record, oldVersion in
            for step in ordered
            where oldVersion < step.schemaVersion && (step.type == nil || step.type == record.typeName) {
                for (old, new) in step.rename.sorted(by: { $0.key < $1.key }) { record.renameField(old, to: new) }
                for field in step.drop { record[field] = nil }
                for (field, value) in step.defaults where record[field] == nil { record[field] = value }
            }
        }
    }
}

extension ConfigurationDecoder {
    static let migrationKeys: Set<String> = ["schema_version", "type", "rename", "drop", "default"]

    mutating func decodeMigrations(_ value: TOMLValue?, schemaVersion: Int64) -> [FieldMigration] {
        var steps: [FieldMigration] = []
        for (key, t, item) in arrayOfTables(value, "migrations", known: Self.migrationKeys) {
            guard let v = t["schema_version"], let version = integer(v, key + ".schema_version", min: 1) else {
                if t["schema_version"] == nil {
                    problem(item, key + ".schema_version", "is required: the version these changes lead to")
                }
                continue
            }
            if version > schemaVersion {
                problem(
                    v,
                    key + ".schema_version",
                    "is \(version), above queue.schema_version \(schemaVersion): raise queue.schema_version to use it"
                )
            }
            var step = FieldMigration(schemaVersion: version)
            step.type = string(t["type"], key + ".type")
            if let r = t["rename"] {
                if case .table(let pairs) = r.kind {
                    for entry in pairs.entries {
                        if let new = string(entry.value, key + ".rename.\(entry.key)") { step.rename[entry.key] = new }
                    }
                } else {
                    problem(
                        r,
                        key + ".rename",
                        "must be a table of old names to new names, e.g. { windSpeedInMph = \"windSpeed\" }"
                    )
                }
            }
            if let d = t["drop"] { step.drop = strings(d, key + ".drop") }
            if let d = t["default"] {
                if case .table(let pairs) = d.kind {
                    for entry in pairs.entries {
                        switch entry.value.kind {
                        case .string(let s): step.defaults[entry.key] = .string(s)
                        case .integer(let i): step.defaults[entry.key] = .int(i)
                        case .float(let f): step.defaults[entry.key] = .double(f)
                        case .bool(let b): step.defaults[entry.key] = .bool(b)
                        default:
                            problem(entry.value, key + ".default.\(entry.key)", "must be a string, number or boolean")
                        }
                    }
                } else {
                    problem(
                        d,
                        key + ".default",
                        "must be a table of field names to values, e.g. { unit = \"imperial\" }"
                    )
                }
            }
            steps.append(step)
        }
        return steps
    }
}
