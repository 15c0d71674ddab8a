/// Numbers and durations as log messages word them, for a person reading
/// the journal: `Uploads resumed after 2m14s; 21,521 records waiting`.
package enum LogText {
    /// 134_000 → "2m14s"; 45_200 → "45s"; 3_720_000 → "1h02m"; under a second → "0s".
    package static func duration(milliseconds: Int64) -> String {
        let seconds = max(0, milliseconds / 1000)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m\(twoDigits(seconds % 60))s" }
        if seconds < 86_400 { return "\(seconds / 3600)h\(twoDigits(seconds / 60 % 60))m" }
        return "\(seconds / 86_400)d\(twoDigits(seconds / 3600 % 24))h"
    }

    /// 21521 → "21,521".
    package static func grouped(_ n: Int64) -> String {
        let digits = Array(String(n.magnitude))
        var out = n < 0 ? "-" : ""
        for (i, digit) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return out
    }

    private static func twoDigits(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
