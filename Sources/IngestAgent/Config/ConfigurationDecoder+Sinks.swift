import EdgeIngestCore

/// `[sinks.NAME]`: more sinks beside `[upload]`, each with `[upload]`'s
/// keys (its own `sink` and batching) and a route (`types`,
/// `max_lag_bytes`, `max_lag_s`, which `[upload]` takes too). ``NamedSink``
/// holds what they become.
extension ConfigurationDecoder {
    /// The keys that route a sink.
    static let routeKeys: Set<String> = ["types", "max_lag_bytes", "max_lag_s"]

    /// A sink's route; `section` is `upload` or `sinks.NAME`.
    mutating func decodeRoute(_ t: TOMLTable?, section: String, types: [RecordType]) -> SinkRoute {
        var route = SinkRoute()
        guard let t else { return route }
        if let v = t["types"] {
            let names = strings(v, section + ".types")
            let declared = Set(types.map(\.name))
            for name in names where !declared.contains(name) {
                problem(
                    v,
                    section + ".types",
                    "names '\(name)', which is not a declared type: expected some of \(declared.sorted().joined(separator: ", "))"
                )
            }
            if names.isEmpty {
                problem(v, section + ".types", "is empty: name at least one type, or leave it out (every type)")
            }
            route.types = Set(names)
        }
        if let v = t["max_lag_bytes"], let n = integer(v, section + ".max_lag_bytes", min: 0) {
            if n > 0, n < 1 << 20 {
                problem(v, section + ".max_lag_bytes", "must be 0 (no bound) or at least 1048576 (1 MiB), got \(n)")
            }
            route.maxLagBytes = n
        }
        if let v = t["max_lag_s"], let n = integer(v, section + ".max_lag_s", min: 60) { route.maxLagSeconds = n }
        return route
    }

    /// Every `[sinks.NAME]`, in the file's order.
    mutating func decodeNamedSinks(
        _ value: TOMLValue?,
        types: [RecordType],
        environment: [String: String]
    ) -> [NamedSink] {
        guard let all = table(value, "sinks") else { return [] }
        var sinks: [NamedSink] = []
        for entry in all.entries {
            let name = entry.key
            let section = "sinks.\(name)"
            guard
                name.utf8.count <= 40, !name.isEmpty,
                name.utf8.allSatisfy({
                    $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0)
                })
            else {
                problem(entry.value, section, "a sink's name is 1–40 lower-case letters, digits, '-' or '_'")
                continue
            }
            guard name != QueueRouting.defaultSinkName else {
                problem(entry.value, section, "'upload' is the name of [upload] itself: give this sink another name")
                continue
            }
            guard let t = table(entry.value, section) else { continue }
            let first = (problems.count, uploadHolds.count)
            credentialSection = "sink-\(name)"
            let decoded = decodeUpload(t, environment: environment)
            credentialSection = nil
            // Its problems under its own section's name, not [upload]'s.
            for i in first.0..<problems.count { problems[i] = problems[i].moved(to: section) }
            for i in first.1..<uploadHolds.count { uploadHolds[i] = uploadHolds[i].moved(to: section) }
            let route = decodeRoute(t, section: section, types: types)
            guard let (settings, sink) = decoded else { continue }
            sinks.append(NamedSink(name: name, upload: settings, sink: sink, route: route))
        }
        return sinks
    }
}

extension ConfigurationProblem {
    /// This problem of an `[upload]` key, said of the same key in `section`.
    func moved(to section: String) -> ConfigurationProblem {
        var moved = self
        if key == "upload" || key.hasPrefix("upload.") { moved.key = section + key.dropFirst("upload".count) }
        moved.message = message.replacing("[upload]", with: "[\(section)]")
        return moved
    }
}

extension ConfigurationDecoder {
    /// With several sinks, each type must reach one (else its readings would
    /// never leave the queue), and `[sinks.NAME]` needs a type to deliver.
    mutating func checkRoutes(_ c: AgentConfiguration, sinks value: TOMLValue?) {
        let sinks = c.deliveringSinks
        guard sinks.count > 1 || sinks.first?.route.types != nil else { return }
        for type in c.types where !sinks.contains(where: { $0.route.types?.contains(type.name) ?? true }) {
            problem(
                value,
                "sinks",
                "type '\(type.name)' is routed to no sink: its readings would never leave the queue. Add it to a sink's types, or leave types out of one sink (every type)"
            )
        }
    }
}
