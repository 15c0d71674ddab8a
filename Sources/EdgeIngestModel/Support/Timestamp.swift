/// ISO 8601 parsing and formatting for `timestamp` fields, in UTC with
/// millisecond precision, without Foundation's formatters (they are slow and
/// locale-sensitive).
package enum Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)` into epoch
    /// milliseconds. A zone is required: a reading without one is ambiguous.
    /// Fractions beyond milliseconds are truncated.
    package static func parseISO8601(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    package static func parse(_ p: UnsafeRawBufferPointer) -> Int64? {
        var i = 0
        func digits(_ n: Int) -> Int64? {
            guard i + n <= p.count else { return nil }
            var v: Int64 = 0
            for _ in 0..<n {
                let c = p[i]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
                i += 1
            }
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < p.count, p[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
            let day = digits(2)
        else { return nil }
        guard i < p.count, p[i] == UInt8(ascii: "T") || p[i] == UInt8(ascii: "t") || p[i] == UInt8(ascii: " ") else {
            return nil
        }
        i += 1
        guard let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")),
            let second = digits(2)
        else { return nil }
        var millis: Int64 = 0
        if i < p.count, p[i] == UInt8(ascii: ".") || p[i] == UInt8(ascii: ",") {
            i += 1
            var n = 0
            while i < p.count, p[i] >= 48, p[i] <= 57 {
                if n < 3 { millis = millis * 10 + Int64(p[i] - 48) }
                n += 1
                i += 1
            }
            guard n > 0 else { return nil }
            for _ in n..<max(n, 3) { millis *= 10 }
        }
        guard i < p.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch p[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = p[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(UInt8(ascii: ":"))
            guard let om = digits(2), oh < 24, om < 60 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        default:
            return nil
        }
        guard i == p.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year, month), hour < 24, minute < 60,
            second < 61
        else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetMinutes * 60
        return seconds * 1_000 + millis
    }

    /// Appends `2026-11-21T11:41:55.120Z` for `milliseconds` since the epoch.
    static func appendISO8601(milliseconds: Int64, to out: inout [UInt8]) {
        var ms = milliseconds % 1_000
        var seconds = milliseconds / 1_000
        if ms < 0 {
            ms += 1_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (y, m, d) = civilFromDays(days)
        // Digits written in place: an array per field cost 19 % of the
        // realistic ingest's CPU (docs/BENCHMARKS.md, issue 22).
        func put(_ v: Int64, _ width: Int) {
            let start = out.count
            for _ in 0..<width { out.append(48) }
            var v = v
            var k = width - 1
            while k >= 0 {
                out[start + k] = UInt8(48 + v % 10)
                v /= 10
                k -= 1
            }
        }
        if y < 0 || y > 9999 {
            // ISO 8601 expanded years: a sign and at least six digits; every
            // digit of the year, never a truncated one (Fuzz/NDJSONFuzz.swift
            // found years past 999,999 written modulo a million).
            out.append(y < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            var width = 6
            var rest = abs(y) / 1_000_000
            while rest > 0 {
                width += 1
                rest /= 10
            }
            put(abs(y), width)
        } else {
            put(y, 4)
        }
        out.append(UInt8(ascii: "-"))
        put(m, 2)
        out.append(UInt8(ascii: "-"))
        put(d, 2)
        out.append(UInt8(ascii: "T"))
        put(secondOfDay / 3_600, 2)
        out.append(UInt8(ascii: ":"))
        put(secondOfDay % 3_600 / 60, 2)
        out.append(UInt8(ascii: ":"))
        put(secondOfDay % 60, 2)
        out.append(UInt8(ascii: "."))
        put(ms, 3)
        out.append(UInt8(ascii: "Z"))
    }

    package static func iso8601(milliseconds: Int64) -> String {
        var out: [UInt8] = []
        appendISO8601(milliseconds: milliseconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func isLeap(_ y: Int64) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    private static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: return isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
