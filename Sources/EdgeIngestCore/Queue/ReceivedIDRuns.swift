/// How format 4 stores received `_id`s (``ReceivedIDs``): in **runs**, a
/// row per account and id prefix — the id's first 5 bytes: the second of
/// its timestamp and the first byte of its process part — holding the
/// other 7 bytes of each id (`ids`, ascending) and the CRC-32 of its
/// encoded line (`contents`, 4 bytes little-endian each).
///
/// Ids reach the runs in bulk: each stored batch's ids are first **pending**
/// — in memory, for lookups, and a row of `received_pending` (the account,
/// the 12-byte ids, their contents), written with the batch, for a restart
/// — and about once a second they are **folded** into the runs: sorted,
/// one write per run. Ids with nothing in common (random ids: a row each
/// in the groups of format 3) then cost a few bytes appended to a run
/// instead of a row at a key anywhere in the table, and a commit no longer
/// writes a page of the table per id (docs/BENCHMARKS.md, "Random ids at a
/// gateway").
enum ReceivedIDRun {
    /// The id's bytes in a run's key, after the account's name.
    static let prefixBytes = 5
    /// The id's bytes stored per member.
    static let suffixBytes = 7

    /// Whether two ids fall in the same run (for one account).
    static func sameRun(_ a: ReceivedID, _ b: ReceivedID) -> Bool { a.high >> 24 == b.high >> 24 }

    /// `key` = the account's name, then the id's first 5 bytes.
    static func setKey(_ key: inout [UInt8], tenant: [UInt8], id: ReceivedID) {
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: tenant)
        withUnsafeBytes(of: id.high.bigEndian) { key.append(contentsOf: $0.prefix(prefixBytes)) }
    }

    /// The id's last 7 bytes as an integer, ordered as the bytes are.
    static func suffix(_ id: ReceivedID) -> UInt64 { (id.high & 0xFF_FFFF) << 32 | UInt64(id.low) }

    static func suffix(in ids: UnsafeRawBufferPointer, at index: Int) -> UInt64 {
        var value: UInt64 = 0
        let start = index * suffixBytes
        for i in start..<start + suffixBytes { value = value << 8 | UInt64(ids[i]) }
        return value
    }

    static func content(in contents: UnsafeRawBufferPointer, at index: Int) -> UInt32 {
        UInt32(littleEndian: contents.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
    }

    static func appendContent(_ content: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: content.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// The content of `suffix` in a run's (ascending) ids, if there.
    static func find(_ suffix: UInt64, ids: UnsafeRawBufferPointer, contents: UnsafeRawBufferPointer) -> UInt32? {
        var low = 0
        var high = ids.count / suffixBytes
        while low < high {
            let middle = (low + high) / 2
            let found = Self.suffix(in: ids, at: middle)
            if found == suffix { return content(in: contents, at: middle) }
            if found < suffix { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// A run's blobs with `added` (ascending suffixes, with their contents)
    /// merged in; an id already in the run keeps its first content.
    static func merge(
        ids: UnsafeRawBufferPointer,
        contents: UnsafeRawBufferPointer,
        with added: ArraySlice<(suffix: UInt64, content: UInt32)>,
        into out: inout (ids: [UInt8], contents: [UInt8])
    ) {
        let count = ids.count / suffixBytes
        let most = count + added.count
        out.ids = [UInt8](repeating: 0, count: most * suffixBytes)
        out.contents = [UInt8](repeating: 0, count: most * 4)
        var written = 0
        out.ids.withUnsafeMutableBytes { outIDs in
            out.contents.withUnsafeMutableBytes { outContents in
                func write(_ suffix: UInt64, _ content: UInt32) {
                    var value = suffix
                    for i in (0..<suffixBytes).reversed() {
                        outIDs[written * suffixBytes + i] = UInt8(truncatingIfNeeded: value)
                        value >>= 8
                    }
                    outContents.storeBytes(of: content.littleEndian, toByteOffset: written * 4, as: UInt32.self)
                    written += 1
                }
                var i = 0
                var next = added.startIndex
                while i < count || next < added.endIndex {
                    let old = i < count ? suffix(in: ids, at: i) : UInt64.max
                    if next < added.endIndex, added[next].suffix < old {
                        write(added[next].suffix, added[next].content)
                        next += 1
                    } else {
                        if next < added.endIndex, added[next].suffix == old { next += 1 }
                        write(old, content(in: contents, at: i))
                        i += 1
                    }
                }
            }
        }
        out.ids.removeLast((most - written) * suffixBytes)
        out.contents.removeLast((most - written) * 4)
    }

    /// Whether a run's blobs have the sizes of some number of ids (their
    /// order unchecked): enough to read them without going out of bounds.
    static func hasConsistentSizes(ids: UnsafeRawBufferPointer, contents: UnsafeRawBufferPointer) -> Bool {
        ids.count % suffixBytes == 0 && contents.count == ids.count / suffixBytes * 4
    }

    /// What is wrong with a run row, if anything: a key of an account's
    /// name and 5 id bytes, 1 or more ids of 7 bytes, strictly ascending,
    /// and 4 bytes of content per id.
    static func damage(
        key: UnsafeRawBufferPointer,
        ids: UnsafeRawBufferPointer,
        contents: UnsafeRawBufferPointer
    )
        -> String?
    {
        guard key.count >= prefixBytes else { return "its key is \(key.count) bytes, shorter than an id's prefix" }
        guard !ids.isEmpty, ids.count % suffixBytes == 0 else {
            return "its ids are \(ids.count) bytes, not a positive multiple of \(suffixBytes)"
        }
        let count = ids.count / suffixBytes
        guard contents.count == count * 4 else { return "it has \(contents.count) bytes of contents for \(count) ids" }
        for i in 1..<max(1, count) where suffix(in: ids, at: i) <= suffix(in: ids, at: i - 1) {
            return "its ids are not in ascending order"
        }
        return nil
    }

    /// What is wrong with a pending row, if anything: 1 or more 12-byte
    /// ids and 4 bytes of content per id.
    static func pendingDamage(ids: UnsafeRawBufferPointer, contents: UnsafeRawBufferPointer) -> String? {
        guard !ids.isEmpty, ids.count % 12 == 0 else {
            return "its ids are \(ids.count) bytes, not a positive multiple of 12"
        }
        guard contents.count == ids.count / 12 * 4 else {
            return "it has \(contents.count) bytes of contents for \(ids.count / 12) ids"
        }
        return nil
    }
}

/// The received ids not yet folded into the runs (``ReceivedIDRun``): what
/// `received_pending` holds, in memory, by account and run. A new id is
/// appended to its run's list (a few hundred lists a second, all in the
/// cache: no lookup of a table the size of a second's ids); a lookup —
/// made only for ids their generation's filter does not rule out — reads
/// one run's list.
struct PendingReceivedIDs {
    struct Entry {
        var id: ReceivedID
        var content: UInt32
    }

    /// Accounts' names by number (numbers only while ids are pending).
    private(set) var tenants: [[UInt8]] = []
    private var numbers: [[UInt8]: UInt32] = [:]
    /// Each run's list by its key (``runKey(tenant:id:)``), in the order they came.
    private var runIndex: [UInt64: Int] = [:]
    private var runKeys: [UInt64] = []
    private var runs: [[Entry]] = []
    private(set) var count = 0
    /// When the first pending id came (ms, wall clock), nil when none.
    private(set) var since: Int64?

    var isEmpty: Bool { count == 0 }

    mutating func number(of tenant: [UInt8]) -> UInt32 {
        if let number = numbers[tenant] { return number }
        let number = UInt32(tenants.count)
        tenants.append(tenant)
        numbers[tenant] = number
        return number
    }

    func knownNumber(of tenant: [UInt8]) -> UInt32? { numbers[tenant] }

    /// The account's number above the id's first 5 bytes.
    private static func runKey(tenant: UInt32, id: ReceivedID) -> UInt64 { UInt64(tenant) << 40 | id.high >> 24 }

    mutating func insert(tenant: UInt32, id: ReceivedID, content: UInt32, now: Int64) {
        if since == nil { since = now }
        let key = Self.runKey(tenant: tenant, id: id)
        if let run = runIndex[key] {
            runs[run].append(Entry(id: id, content: content))
        } else {
            runIndex[key] = runs.count
            runKeys.append(key)
            runs.append([Entry(id: id, content: content)])
        }
        count += 1
    }

    /// The content the id first came with, if pending.
    func content(tenant: UInt32, id: ReceivedID) -> UInt32? {
        guard let run = runIndex[Self.runKey(tenant: tenant, id: id)] else { return nil }
        return runs[run].first { $0.id == id }?.content
    }

    /// Calls `body` with each run's account number and its ids, ascending
    /// (a later copy of an id left out), runs in key order.
    mutating func forEachRun(_ body: (UInt32, [Entry]) throws -> Void) rethrows {
        for run in runKeys.indices.sorted(by: { runKeys[$0] < runKeys[$1] }) {
            // In place (the lists are emptied after a fold).
            runs[run].sort { $0.id < $1.id }  // stable: a copy after the first
            var unique = 0
            for i in runs[run].indices where i == 0 || runs[run][i].id != runs[run][unique - 1].id {
                runs[run][unique] = runs[run][i]
                unique += 1
            }
            runs[run].removeLast(runs[run].count - unique)
            try body(UInt32(truncatingIfNeeded: runKeys[run] >> 40), runs[run])
        }
    }

    /// Empties the lists, and the accounts' numbers with them (so they
    /// stay below 2²⁴: a fold comes after at most 131,072 ids).
    mutating func removeAll() {
        tenants.removeAll(keepingCapacity: true)
        numbers.removeAll(keepingCapacity: true)
        runIndex.removeAll(keepingCapacity: true)
        runKeys.removeAll(keepingCapacity: true)
        runs.removeAll(keepingCapacity: true)
        count = 0
        since = nil
    }
}
