import EdgeIngestCore

/// Slows down password and API-key guessing at the gateway's login, per
/// account and per client address (issue 23). After ``freeFailures``
/// failed logins (per account: the email, whether or not it exists; per
/// address: ``freeFailuresPerAddress``) each further attempt must wait
/// for a delay that doubles from 1 s up to ``maxDelaySeconds`` since the
/// last failure; an attempt during the delay is answered 429 with
/// Retry-After **before** the credentials are checked — the same answer
/// for accounts that exist and that do not, and no PBKDF2 work to spend.
/// Failures are forgotten ``forgetAfterSeconds`` after the last one; a
/// successful login clears its account's count (not its address's: one
/// valid account must not unlock guessing others from that address).
///
///     if let wait = throttle.delay(account: email, address: ip, now: now) { /* 429, Retry-After: wait */ }
///     ok ? throttle.succeeded(account: email) : throttle.failed(account: email, address: ip, now: now)
///
/// In memory, bounded to `maxEntries` keys (forgotten ones go first, then
/// the oldest); a restart forgets it.
final class LoginThrottle: Sendable {
    static let freeFailures = 5
    static let freeFailuresPerAddress = 20
    static let maxDelaySeconds: Int64 = 300
    static let forgetAfterSeconds: Int64 = 900
    let maxEntries: Int

    init(maxEntries: Int = 10_000) {
        self.maxEntries = max(2, maxEntries)
    }

    private struct Entry {
        var failures: Int
        var last: Int64
    }

    private let entries = PlainMutex<[String: Entry]>([:])

    /// Seconds to wait before the next attempt may be checked, or nil when it may be now.
    func delay(account: String?, address: String, now: Int64) -> Int64? {
        entries.withLock { entries in
            var wait: Int64 = 0
            for key in Self.keys(account: account, address: address) {
                guard let entry = entries[key] else { continue }
                if now - entry.last >= Self.forgetAfterSeconds {
                    entries[key] = nil
                    continue
                }
                let free = key.hasPrefix("address:") ? Self.freeFailuresPerAddress : Self.freeFailures
                guard entry.failures >= free else { continue }
                let delay = min(Self.maxDelaySeconds, Int64(1) << min(entry.failures - free, 20))
                wait = max(wait, entry.last + delay - now)
            }
            return wait > 0 ? wait : nil
        }
    }

    func failed(account: String?, address: String, now: Int64) {
        entries.withLock { entries in
            for key in Self.keys(account: account, address: address) {
                if entries[key] == nil, entries.count >= maxEntries {
                    // Room for a new key: the forgotten ones go, else the oldest.
                    entries = entries.filter { now - $0.value.last < Self.forgetAfterSeconds }
                    if entries.count >= maxEntries, let oldest = entries.min(by: { $0.value.last < $1.value.last }) {
                        entries[oldest.key] = nil
                    }
                }
                var entry = entries[key] ?? Entry(failures: 0, last: now)
                if now - entry.last >= Self.forgetAfterSeconds { entry.failures = 0 }
                entry.failures += 1
                entry.last = now
                entries[key] = entry
            }
        }
    }

    /// How many accounts and addresses are remembered.
    var count: Int { entries.withLock { $0.count } }

    func succeeded(account: String?) {
        guard let key = Self.keys(account: account, address: nil).first else { return }
        entries.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// The table's keys for a login: its account (emails compared without case) and its address.
    private static func keys(account: String?, address: String?) -> [String] {
        [account.map { "account:" + $0.lowercased() }, address.map { "address:" + $0 }].compactMap { $0 }
    }

    /// The client's address without its port (`[::1]:5000` → `::1`).
    static func address(ofPeer peer: String) -> String {
        if peer.hasPrefix("["), let close = peer.firstIndex(of: "]") {
            return String(peer[peer.index(after: peer.startIndex)..<close])
        }
        if let colon = peer.lastIndex(of: ":") { return String(peer[..<colon]) }
        return peer
    }
}
