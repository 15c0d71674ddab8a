/// One metric of `/metrics` (Prometheus text exposition format 0.0.4): its
/// name, type, help and how its samples are read from `Root` (the agent's
/// status). Fields of the status table carry theirs (``JSONField/metrics``),
/// so status.json, the status text and `/metrics` come from one place.
struct MetricFamily<Root>: Sendable {
    enum Kind: String, Sendable { case counter, gauge, histogram }

    struct Sample: Sendable {
        /// `_bucket`, `_sum` or `_count` for a histogram's samples.
        var suffix = ""
        var labels: [(name: String, value: String)] = []
        var value: Double
    }

    let name: String
    let kind: Kind
    let help: String
    let samples: @Sendable (Root) -> [Sample]

    /// The family in the text format: `# HELP`, `# TYPE`, then a line per
    /// sample. A family without samples is left out.
    func write(_ root: Root, into out: inout String) {
        let samples = samples(root)
        guard !samples.isEmpty else { return }
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
        for sample in samples {
            out += name + sample.suffix
            if !sample.labels.isEmpty {
                out +=
                    "{" + sample.labels.map { "\($0.name)=\"\(Self.escaped($0.value))\"" }.joined(separator: ",") + "}"
            }
            out += " " + Self.number(sample.value) + "\n"
        }
    }

    /// Label values escape `\`, `"` and newlines.
    static func escaped(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// Whole numbers without a fraction; others as Swift prints them.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

extension JSONField {
    /// This field as a metric too: its number, as `name`.
    func exported(_ name: String, _ kind: MetricFamily<Root>.Kind, help: String) -> Self {
        guard let number else { preconditionFailure("\(key) has no number to export") }
        var field = self
        field.metrics.append(
            MetricFamily(name: name, kind: kind, help: help) { root in number(root).map { [.init(value: $0)] } ?? [] }
        )
        return field
    }

    /// This field (counts by name) as a metric with one sample per name, labelled `label`.
    func exported(_ name: String, _ kind: MetricFamily<Root>.Kind, help: String, label: String) -> Self {
        guard let counts else { preconditionFailure("\(key) has no counts to export") }
        var field = self
        field.metrics.append(
            MetricFamily(name: name, kind: kind, help: help) { root in
                counts(root).sorted { $0.key < $1.key }.map {
                    .init(labels: [(label, $0.key)], value: Double($0.value))
                }
            }
        )
        return field
    }
}

extension Array {
    /// `/metrics`: every family of these fields, in table order.
    func prometheusText<Root>(of root: Root) -> String where Element == JSONField<Root> {
        var out = ""
        for field in self { for family in field.metrics { family.write(root, into: &out) } }
        return out
    }
}
