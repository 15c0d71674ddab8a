/// What `stored` lacks and what it holds too often or should not hold at
/// all, compared with `expected` as multisets (order does not matter);
/// empty when they hold the same items. For checking an engine's rows
/// without printing thousands of them when they differ.
///
///     let difference = difference(stored: rows, expected: readings)
///     #expect(difference.isEmpty, "\(difference)")
public func difference(stored: [String], expected: [String]) -> String {
    var counts: [String: Int] = [:]
    for item in stored { counts[item, default: 0] += 1 }
    for item in expected { counts[item, default: 0] -= 1 }
    let missing = counts.filter { $0.value < 0 }.keys.sorted()
    let extra = counts.filter { $0.value > 0 }.keys.sorted()
    guard !missing.isEmpty || !extra.isEmpty else { return "" }
    return
        "\(stored.count) stored, \(expected.count) expected: \(missing.count) missing (\(missing.prefix(3))), \(extra.count) extra or repeated (\(extra.prefix(3)))"
}
