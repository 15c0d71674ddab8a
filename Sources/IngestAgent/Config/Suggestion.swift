/// "Did you mean …?" for a misspelled key or value: the closest of the
/// choices by edit distance (case, `-` for `_` and one or two typos
/// forgiven), or nil when none is close enough to be a likely meaning.
///
/// ```swift
/// Suggestion.closest(to: "overflow-policy", among: ["overflow_policy", "durability"])  // "overflow_policy"
/// Suggestion.closest(to: "colour", among: ["log_level", "log_target"])                 // nil
/// ```
enum Suggestion {
    static func closest(to word: String, among choices: some Sequence<String>) -> String? {
        let typed = normalized(word)
        var best: (choice: String, distance: Int)?
        for choice in choices {
            let distance = editDistance(typed, normalized(choice))
            if distance < (best?.distance ?? .max) { best = (choice, distance) }
        }
        guard let best else { return nil }
        // One typo in a short word, two in a longer one; never a guess
        // that changes most of what was written.
        let allowed = typed.count <= 4 ? 1 : typed.count <= 8 ? 2 : 3
        return best.distance <= allowed ? best.choice : nil
    }

    /// ` (did you mean "paths"?)`, or nothing.
    static func phrase(for word: String, among choices: some Sequence<String>) -> String {
        closest(to: word, among: choices).map { " (did you mean \"\($0)\"?)" } ?? ""
    }

    private static func normalized(_ word: String) -> [UInt8] {
        word.lowercased().utf8.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "_") : $0 }
    }

    /// Levenshtein distance; inputs are short (keys and names).
    private static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
