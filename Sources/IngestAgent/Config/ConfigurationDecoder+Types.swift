import EdgeIngestCore

/// `[types.NAME]`: the record types, one `field = "type"` line per field.
extension ConfigurationDecoder {
    mutating func decodeTypes(_ value: TOMLValue?) -> [RecordType] {
        guard let value else { return [] }
        guard case .table(let table) = value.kind else {
            problem(value, "types", "must be a table of record types ([types.NAME])")
            return []
        }
        var types: [RecordType] = []
        for entry in table.entries {
            let key = "types.\(entry.key)"
            guard case .table(let fieldsTable) = entry.value.kind else {
                problem(
                    entry.value,
                    key,
                    "must be a table of fields: [\(key)] then one 'field = \"type\"' line per field"
                )
                continue
            }
            var fields: [RecordType.Field] = []
            for field in fieldsTable.entries {
                if let f = decodeField(field.key, field.value, key: "\(key).\(field.key)") { fields.append(f) }
            }
            do {
                types.append(try RecordType(name: entry.key, fields: fields))
            } catch let error as EdgeIngestError {
                problem(entry.value, key, error.message)
            } catch {
                problem(entry.value, key, "\(error)")
            }
        }
        return types
    }

    /// `field = "int"`, `field = "string?"` (optional), or
    /// `field = { type = "string", required = false, default = "C" }`.
    mutating func decodeField(_ name: String, _ value: TOMLValue, key: String) -> RecordType.Field? {
        let typeNames = "string, int, double, bool, timestamp or objectId"
        switch value.kind {
        case .string(var spec):
            var required = true
            if spec.hasSuffix("?") {
                required = false
                spec.removeLast()
            }
            guard let type = FieldType(name: spec) else {
                problem(value, key, "unknown field type \"\(spec)\": use \(typeNames) (add '?' for optional)")
                return nil
            }
            return RecordType.Field(name: name, type: type, isRequired: required)
        case .table(let t):
            rejectUnknown(t, known: ["type", "required", "default"], prefix: key + ".", line: value.line)
            guard let typeName = string(t["type"], key + ".type") else {
                problem(value, key + ".type", "is required: one of \(typeNames)")
                return nil
            }
            guard let type = FieldType(name: typeName) else {
                problem(t["type"], key + ".type", "unknown field type \"\(typeName)\": use \(typeNames)")
                return nil
            }
            var field = RecordType.Field(name: name, type: type)
            if let r = t["required"] { field.isRequired = bool(r, key + ".required") ?? true }
            if let d = t["default"] { field.defaultValue = defaultValue(d, type: type, key: key + ".default") }
            return field
        default:
            problem(
                value,
                key,
                "must be a type name (\"int\") or a table ({ type = \"int\", default = 0 }), got \(value.typeName)"
            )
            return nil
        }
    }

    mutating func defaultValue(_ value: TOMLValue, type: FieldType, key: String) -> FieldValue? {
        let raw: RawFieldValue
        switch value.kind {
        case .string(let s): raw = .string(s)
        case .integer(let n): raw = .int(n)
        case .float(let d): raw = .double(d)
        case .bool(let b): raw = .bool(b)
        default:
            problem(value, key, "must be a \(type) value, got \(value.typeName)")
            return nil
        }
        do {
            let probe = try RecordType(name: "Default", fields: [.init(name: "value", type: type)])
            return try probe.validate(["value": raw])["value"]
        } catch let error as EdgeIngestError {
            problem(value, key, error.message.replacingField("value", with: key))
            return nil
        } catch {
            return nil
        }
    }
}
