/// MQTT topic filters (`sensors/+/temperature`, `sensors/#`) and the MQTT
/// input's `types_from_topic` pattern: a filter with one level written
/// `{type}`, which names the record type of the messages it matches.
///
///     let pattern = try MQTTTypePattern("sensors/{type}/#")
///     pattern.type(in: "sensors/WeatherSensor/WX12")   // "WeatherSensor"
///     pattern.filter                                  // "sensors/+/#"
package enum MQTTTopicFilter {
    /// Why `filter` is not a valid topic filter, or nil when it is.
    package static func problem(_ filter: String) -> String? {
        if filter.isEmpty { return "a topic filter cannot be empty" }
        if filter.utf8.count > 65_535 { return "a topic filter is at most 65535 bytes" }
        if filter.contains("\u{0}") { return "a topic filter cannot contain a NUL character" }
        let levels = filter.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("#"), level != "#" || index != levels.count - 1 {
                return "'#' must be a whole level and the last one (e.g. \"sensors/#\")"
            }
            if level.contains("+"), level != "+" { return "'+' must be a whole level (e.g. \"sensors/+/temperature\")" }
        }
        return nil
    }

    /// Whether every topic `inner` matches is matched by `outer` too
    /// (`sensors/#` covers `sensors/+/room`). A broker sends a message once
    /// per matching subscription, so a subscriber keeps only filters no
    /// other covers.
    package static func covers(_ outer: String, _ inner: String) -> Bool {
        let o = outer.split(separator: "/", omittingEmptySubsequences: false)
        let i = inner.split(separator: "/", omittingEmptySubsequences: false)
        // `#` and `+` first do not match `$SYS/…`: they cannot cover a filter that does.
        if inner.hasPrefix("$"), let head = o.first, head == "#" || head == "+" { return false }
        for index in o.indices {
            if o[index] == "#" { return true }
            guard index < i.count, i[index] != "#" else { return false }
            guard o[index] == "+" || o[index] == i[index] else { return false }
        }
        return o.count == i.count
    }

    /// Whether some topic matches both filters (`a/+/c` and `a/b/+` both match `a/b/c`).
    package static func overlap(_ a: String, _ b: String) -> Bool {
        if a.hasPrefix("$") != b.hasPrefix("$") {
            // A wildcard first level never matches `$…`; a literal `$…` level never matches a plain topic.
            let plain = a.hasPrefix("$") ? b : a
            if plain.hasPrefix("#") || plain.hasPrefix("+") { return false }
        }
        let x = a.split(separator: "/", omittingEmptySubsequences: false)
        let y = b.split(separator: "/", omittingEmptySubsequences: false)
        for index in 0..<max(x.count, y.count) {
            let p = index < x.count ? x[index] : nil
            let q = index < y.count ? y[index] : nil
            if p == "#" || q == "#" { return true }
            guard let p, let q else { return false }
            guard p == "+" || q == "+" || p == q else { return false }
        }
        return true
    }

    /// `filters` without those another one covers (the first of equal ones kept), in order.
    package static func withoutCovered(_ filters: [String]) -> [String] {
        filters.enumerated().filter { entry in
            !filters.enumerated().contains { other in
                other.offset != entry.offset && covers(other.element, entry.element)
                    && (other.element != entry.element || other.offset < entry.offset)
            }
        }.map(\.element)
    }

    /// Whether `topic` (a message's, without wildcards) matches `filter`.
    /// As MQTT says, `#` and `+` at the first level do not match topics
    /// starting with `$` (such as `$SYS/…`).
    package static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$"), let head = f.first, head == "#" || head == "+" { return false }
        var i = 0
        while i < f.count {
            if f[i] == "#" { return true }
            guard i < t.count, f[i] == "+" || f[i] == t[i] else { return false }
            i += 1
        }
        return i == t.count
    }
}

/// `types_from_topic`: a topic filter with one level `{type}`.
package struct MQTTTypePattern: Sendable, Hashable {
    package let text: String
    private let levels: [Substring]
    private let typeLevel: Int

    package init(_ text: String) throws(MQTTProtocolError) {
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        let typeLevels = levels.indices.filter { levels[$0] == "{type}" }
        guard typeLevels.count == 1 else {
            throw MQTTProtocolError(
                "must have exactly one level written {type}, e.g. \"sensors/{type}/#\" (the record type is that level of each message's topic)"
            )
        }
        self.text = text
        self.levels = levels
        typeLevel = typeLevels[0]
        if let problem = MQTTTopicFilter.problem(filter) { throw MQTTProtocolError(problem) }
    }

    /// The pattern as a topic filter: `{type}` becomes `+`.
    package var filter: String {
        levels.enumerated().map { $0.offset == typeLevel ? "+" : String($0.element) }.joined(separator: "/")
    }

    /// The `{type}` level of `topic`, or nil when `topic` does not match the pattern.
    package func type(in topic: String) -> String? {
        guard MQTTTopicFilter.matches(filter, topic) else { return nil }
        let level = topic.split(separator: "/", omittingEmptySubsequences: false)[typeLevel]
        return level.isEmpty ? nil : String(level)
    }
}
