import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Turns a TOML table into an ``AgentConfiguration``, collecting every
/// problem (with its line and key) instead of stopping at the first, so
/// `check-config` reports them all at once.
///
/// Each section has its own file, which owns its keys (the one list
/// decoding checks against, and that a test holds etc/ingestd.toml to), its
/// defaults (those of the type it fills) and its decoding:
/// `ConfigurationDecoder+Agent.swift`, `+Queue`, `+Types`, `+Inputs`,
/// `+Upload` (with `Sinks/`), `AuthSettings.swift` and
/// `FieldMigration.swift`. This file holds what they share: reading
/// scalars, tables and secrets with the problems they can have.
struct ConfigurationDecoder {
    var problems: [ConfigurationProblem] = []
    /// While a `[sinks.NAME]` is decoded: `sink-NAME`, the start of its
    /// systemd credentials' names (`sink-NAME-token`) instead of `upload`.
    var credentialSection: String?

    /// The problems in the order of the file (those without a line, such as
    /// a required key that is missing, last), as `check-config` lists them.
    var problemsByLine: [ConfigurationProblem] {
        problems.enumerated().sorted { ($0.element.line ?? .max, $0.offset) < ($1.element.line ?? .max, $1.offset) }
            .map(\.element)
    }

    mutating func problem(_ value: TOMLValue?, _ key: String, _ message: String) {
        problems.append(ConfigurationProblem(line: value?.line, key: key, message: message))
    }

    /// Problems that an earlier release accepted and that would lose or
    /// garble data only once uploaded: the agent still starts and collects,
    /// with uploads held until they are fixed (an upgrade never stops a box
    /// collecting); `check-config` reports them as problems.
    var uploadHolds: [ConfigurationProblem] = []

    mutating func holdUpload(_ value: TOMLValue?, _ key: String, _ message: String) {
        uploadHolds.append(ConfigurationProblem(line: value?.line, key: key, message: message))
    }

    /// Holds that no sink enforces by itself: the agent holds every upload
    /// while one is there (``AgentConfiguration/heldUploads``).
    var everyUploadHolds: [ConfigurationProblem] = []

    mutating func holdEveryUpload(_ value: TOMLValue?, _ key: String, _ message: String) {
        holdUpload(value, key, message)
        everyUploadHolds.append(ConfigurationProblem(line: value?.line, key: key, message: message))
    }

    mutating func table(_ value: TOMLValue?, _ key: String) -> TOMLTable? {
        guard let value else { return nil }
        guard case .table(let t) = value.kind else {
            problem(value, key, "must be a table ([\(key)]), got \(value.typeName)")
            return nil
        }
        return t
    }

    mutating func string(_ value: TOMLValue?, _ key: String) -> String? {
        guard let value else { return nil }
        guard case .string(let s) = value.kind else {
            problem(value, key, "must be a string (in quotes), got \(value.typeName)")
            return nil
        }
        return s
    }

    /// A key of `[upload]` that `sink` cannot do without: a string, not empty.
    mutating func requiredString(_ upload: TOMLTable, _ key: String, sink: String, what: String) -> String? {
        guard let value = string(upload[key], "upload." + key), !value.isEmpty else {
            problem(upload["sink"], "upload." + key, "is required with sink = \"\(sink)\": \(what)")
            return nil
        }
        return value
    }

    mutating func strings(_ value: TOMLValue, _ key: String) -> [String] {
        if case .string(let s) = value.kind { return [s] }
        guard case .array(let items) = value.kind else {
            problem(value, key, "must be an array of strings, got \(value.typeName)")
            return []
        }
        return items.compactMap { string($0, key) }
    }

    /// An integer of at least `min`. A duration (a key ending in `_ms`, `_s`
    /// or `_seconds`) is also at most 365 days, so that no deadline or
    /// window computed from it can overflow and crash the agent.
    mutating func integer(_ value: TOMLValue, _ key: String, min: Int64) -> Int64? {
        guard case .integer(let n) = value.kind else {
            problem(value, key, "must be an integer, got \(value.typeName)")
            return nil
        }
        guard n >= min else {
            problem(value, key, "must be at least \(min), got \(n)")
            return nil
        }
        let days365: Int64 = 365 * 24 * 3600
        let max =
            key.hasSuffix("_ms")
            ? days365 * 1000 : key.hasSuffix("_s") || key.hasSuffix("_seconds") ? days365 : Int64.max
        guard n <= max else {
            problem(value, key, "must be at most \(max) (365 days), got \(n)")
            return nil
        }
        return n
    }

    mutating func bool(_ value: TOMLValue, _ key: String) -> Bool? {
        guard case .bool(let b) = value.kind else {
            problem(value, key, "must be true or false, got \(value.typeName)")
            return nil
        }
        return b
    }

    /// A table or database name: letters, digits and underscores, not
    /// starting with a digit (what every engine takes unquoted).
    mutating func identifier(_ value: TOMLValue?, _ key: String) -> String? {
        guard let name = string(value, key) else { return nil }
        let plain =
            !name.isEmpty && name.utf8.count <= 128 && name.utf8.first.map { !(48...57).contains($0) } == true
            && name.utf8.allSatisfy {
                $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
            }
        guard plain else {
            problem(
                value,
                key,
                "must be a plain name (letters, digits, _; not starting with a digit), got \"\(name.prefix(40))\""
            )
            return nil
        }
        return name
    }

    /// A secret from the file `value` names, else the systemd credential
    /// `credential`, read by the one rule of ``SecretText``. An optional
    /// secret's credential that is empty (the unit's `SetCredential=`
    /// default) is no secret, not an error; a file named in the config must
    /// hold one.
    mutating func secret(
        _ value: TOMLValue?,
        _ key: String,
        credential: String,
        environment: [String: String],
        required: Bool = true
    ) -> String? {
        var path = string(value, key)
        let fromCredential = path == nil
        if path == nil, let directory = environment["CREDENTIALS_DIRECTORY"],
            required || access(directory + "/" + credential, F_OK) == 0
        {
            path = directory + "/" + credential
        }
        guard let path else {
            if required {
                problem(
                    nil,
                    key,
                    "is required: a file holding the secret (mode 0600), or the systemd credential '\(credential)'"
                )
            }
            return nil
        }
        let text: String
        do {
            text = try readSmallTextFile(path, limit: FileLimits.small)
        } catch {
            problem(value, key, "'\(path)' cannot be read: \(error.reason)")
            return nil
        }
        let secret = SecretText(text)
        if case .secret(let found) = secret { return found }
        if secret == .absent, fromCredential, !required { return nil }
        problem(value, key, secret.problem(path)!)
        return nil
    }

    /// The entries of an array of tables (`[[name]]`): each table with its
    /// key (`name[n]`) and its value (for line numbers), unknown keys
    /// reported; anything else is a problem.
    mutating func arrayOfTables(
        _ value: TOMLValue?,
        _ name: String,
        known: Set<String>,
        hints: [String: String] = [:]
    ) -> [(key: String, table: TOMLTable, item: TOMLValue)] {
        guard let value else { return [] }
        guard case .array(let items) = value.kind else {
            problem(value, name, "must be an array of tables: write each entry as [[\(name)]]")
            return []
        }
        var tables: [(key: String, table: TOMLTable, item: TOMLValue)] = []
        for (n, item) in items.enumerated() {
            let key = "\(name)[\(n)]"
            guard case .table(let t) = item.kind else {
                problem(item, key, "must be a table")
                continue
            }
            rejectUnknown(t, known: known, prefix: key + ".", line: item.line, hints: hints)
            tables.append((key, t, item))
        }
        return tables
    }

    /// Each key of `table` not in `known` is a problem, with the closest
    /// known key when one is likely meant; `hints` gives the whole message
    /// for a mistake common enough to deserve one (`path` for `paths`).
    mutating func rejectUnknown(
        _ table: TOMLTable?,
        known: Set<String>,
        prefix: String,
        line: Int? = nil,
        hints: [String: String] = [:]
    ) {
        guard let table else { return }
        for entry in table.entries where !known.contains(entry.key) {
            let message =
                hints[entry.key]
                ?? "unknown key\(Suggestion.phrase(for: entry.key, among: known)): expected one of \(known.sorted().joined(separator: ", "))"
            problems.append(ConfigurationProblem(line: entry.value.line, key: prefix + entry.key, message: message))
        }
    }

    /// A name parsed by `parse`; when it is none of `choices`, a problem
    /// ("must be …, got "x"", with the closest choice when one is likely
    /// meant) and nil.
    mutating func choice<T>(
        _ value: TOMLValue?,
        _ key: String,
        _ must: String,
        choices: [String],
        _ parse: (String) -> T?
    ) -> T? {
        guard let value, let name = string(value, key) else { return nil }
        if let parsed = parse(name) { return parsed }
        notOneOf(value, key, name, must, choices: choices)
        return nil
    }

    /// A name that is none of `choices`: "must be one of …, got "x"", with
    /// the closest choice when one is likely meant.
    mutating func notOneOf(_ value: TOMLValue?, _ key: String, _ got: String, _ must: String, choices: [String]) {
        problem(value, key, "\(must), got \"\(got.prefix(40))\"\(Suggestion.phrase(for: got, among: choices))")
    }
}

extension String {
    /// Rewrites "field 'value' …" in a validation message to name the config key.
    func replacingField(_ field: String, with key: String) -> String {
        guard hasPrefix("field '\(field)'") else { return self }
        return "must be " + (split(separator: " must be ", maxSplits: 1).last.map(String.init) ?? self)
    }
}
