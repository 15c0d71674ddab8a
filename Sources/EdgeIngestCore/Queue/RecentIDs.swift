/// The `_id`s of the readings a queue took most recently, in memory, so a
/// reading whose own `_id` is already queued or was just uploaded is
/// refused (`duplicate_id`) instead of being stored and counted twice while
/// the backend keeps one (docs/QUEUE.md "Duplicate ids").
///
/// Two generations of at most ``generationSize`` ids each: new ids go to
/// the current one; a lookup checks both; a full current generation
/// becomes the previous one. So an id is remembered for at least
/// `generationSize` later readings and at most twice that, in 32 bytes
/// per id of the generation size, without a timer or a per-id eviction. Ids are keyed by
/// record type too (each type is its own `_id` space, as a collection).
/// The queue seeds it, once, with the ids of the newest stored segments,
/// so a restart does not forget what is still queued.
///
/// ```swift
/// let recent = try queue.recentIDs()
/// if !recent.claim(typeName: "WeatherSensor", id: reading.id) { /* duplicate_id */ }
/// ```
package final class RecentIDs: Sendable {
    /// The most ids a generation holds before it is retired.
    package let generationSize: Int

    /// Both generations in one open-addressing table of 64-bit
    /// fingerprints (0: empty), interleaved so slot `i` of both sits in one
    /// cache line: a lookup costs one cache miss, not one per generation
    /// (a `Set` per generation measured 4 misses and 0.15 CPU-s per million
    /// readings; docs/BENCHMARKS.md). Half full at most per generation.
    private struct State {
        var slots: [UInt64]
        let mask: Int
        /// Which half of each slot pair is the current generation.
        var current = 0
        var currentCount = 0
        /// What ``touch(_:)`` read (kept so the loads are not optimized away).
        var touched: UInt64 = 0
        /// A small number per record type name, mixed into the fingerprints.
        var types: [String: UInt64] = [:]
        /// The last type claimed and its number (consecutive readings share a type).
        var lastType: (name: String, number: UInt64)?

        init(generationSize: Int) {
            var capacity = 16
            while capacity < 2 * generationSize { capacity <<= 1 }
            slots = [UInt64](repeating: 0, count: 2 * capacity)
            mask = capacity - 1
        }

        mutating func number(of typeName: String) -> UInt64 {
            if let lastType, lastType.name == typeName { return lastType.number }
            let number: UInt64
            if let known = types[typeName] {
                number = known
            } else {
                number = UInt64(types.count)
                types[typeName] = number
            }
            lastType = (typeName, number)
            return number
        }

        /// Whether `print` is in either generation; if not, and `insert`,
        /// it is added to the current one. Returns whether it was found.
        mutating func find(_ print: UInt64, insert: Bool) -> Bool {
            let previous = 1 - current
            var i = Int(truncatingIfNeeded: print >> 40) & mask
            var currentOpen = true
            var previousOpen = true
            var free = -1
            while currentOpen || previousOpen {
                if currentOpen {
                    let entry = slots[2 * i + current]
                    if entry == print { return true }
                    if entry == 0 {
                        currentOpen = false
                        free = i
                    }
                }
                if previousOpen {
                    let entry = slots[2 * i + previous]
                    if entry == print { return true }
                    if entry == 0 { previousOpen = false }
                }
                i = (i + 1) & mask
            }
            if insert {
                slots[2 * free + current] = print
                currentCount += 1
            }
            return false
        }

        /// Loads each print's home slot pair, the loads independent of each
        /// other (the sum only keeps the optimizer from dropping them).
        mutating func touch(_ prints: [UInt64]) {
            var sum: UInt64 = 0
            for print in prints {
                let i = Int(truncatingIfNeeded: print >> 40) & mask
                sum &+= slots[2 * i]
            }
            touched = sum
        }

        /// Deletes `print` from either generation, moving later entries of
        /// its probe chain back so no lookup stops short (linear probing's
        /// backward-shift deletion).
        mutating func remove(_ print: UInt64) {
            for generation in 0..<2 {
                var i = Int(truncatingIfNeeded: print >> 40) & mask
                while slots[2 * i + generation] != print {
                    if slots[2 * i + generation] == 0 { break }
                    i = (i + 1) & mask
                }
                guard slots[2 * i + generation] == print else { continue }
                var j = i
                while true {
                    j = (j + 1) & mask
                    let entry = slots[2 * j + generation]
                    if entry == 0 { break }
                    let home = Int(truncatingIfNeeded: entry >> 40) & mask
                    // Move `entry` into the hole unless its home lies cyclically in (i, j].
                    let homeAfterHole = i <= j ? (home > i && home <= j) : (home > i || home <= j)
                    if !homeAfterHole {
                        slots[2 * i + generation] = entry
                        i = j
                    }
                }
                slots[2 * i + generation] = 0
                if generation == current { currentCount -= 1 }
            }
        }

        /// Retires the previous generation: the current one takes its place.
        mutating func rotate() {
            current = 1 - current
            currentCount = 0
            var i = current
            while i < slots.count {
                slots[i] = 0
                i += 2
            }
        }
    }

    private let state: PlainMutex<State>
    /// Per process: fingerprints an input cannot aim at one slot.
    private let seed = UInt64.random(in: 1...UInt64.max)

    /// - Parameter generationSize: ids per generation (at least 1).
    package init(generationSize: Int) {
        self.generationSize = max(1, generationSize)
        state = PlainMutex(State(generationSize: max(1, generationSize)))
    }

    /// A 64-bit fingerprint of a type and an id (never 0).
    private func fingerprint(_ id: ObjectId, type: UInt64) -> UInt64 {
        withUnsafeBytes(of: id.bytes) { raw in
            let low = raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let high = UInt64(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) | type << 32
            return max(1, Self.mix(Self.mix(low ^ seed) ^ high))
        }
    }

    /// A 64-bit finalizer (murmur3's fmix64): every input bit moves every output bit.
    private static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x &*= 0xff51_afd7_ed55_8ccd
        x ^= x >> 33
        x &*= 0xc4ce_b9fe_1a85_ec53
        x ^= x >> 33
        return x
    }

    /// Takes `id` for a reading of `typeName`: true when it was not known,
    /// false when it is already queued or was taken recently.
    package func claim(typeName: String, id: ObjectId) -> Bool {
        state.withLock { state in
            let print = fingerprint(id, type: state.number(of: typeName))
            if state.find(print, insert: true) { return false }
            if state.currentCount >= generationSize { state.rotate() }
            return true
        }
    }

    /// Takes the ids of the records of `batch` at `indices` (ascending,
    /// over the whole batch) in order, under one lock; returns the
    /// positions in `indices` of those already known (or repeated earlier
    /// in the batch). The table's slots are touched first in a loop of
    /// independent loads, so their cache misses overlap instead of costing
    /// one full miss per reading (docs/BENCHMARKS.md).
    package func claim(_ batch: EncodedBatch, indices: [Int]) -> [Int] {
        guard !indices.isEmpty else { return [] }
        return state.withLock { state in
            var prints: [UInt64] = []
            prints.reserveCapacity(indices.count)
            var next = 0
            var base = 0
            for run in batch.runs where next < indices.count {
                let type = state.number(of: run.typeName)
                run.ids.withUnsafeBytes { ids in
                    while next < indices.count, indices[next] < base + run.count {
                        let offset = (indices[next] - base) * 12
                        let id = ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12]))
                        prints.append(fingerprint(id, type: type))
                        next += 1
                    }
                }
                base += run.count
            }
            state.touch(prints)
            var known: [Int] = []
            for (position, print) in prints.enumerated() {
                if state.find(print, insert: true) {
                    known.append(position)
                } else if state.currentCount >= generationSize {
                    state.rotate()
                }
            }
            return known
        }
    }

    /// Takes every id of `entries` under one lock, or none: returns nil
    /// when all were new (and are now claimed), else the index of the first
    /// already known or repeated within `entries` (and claims none).
    package func claimAll(_ entries: [(typeName: String, id: ObjectId)]) -> Int? {
        state.withLock { state in
            var taken: [UInt64] = []
            taken.reserveCapacity(entries.count)
            for (index, entry) in entries.enumerated() {
                let print = fingerprint(entry.id, type: state.number(of: entry.typeName))
                if state.find(print, insert: true) {
                    for claimed in taken { state.remove(claimed) }
                    return index
                }
                taken.append(print)
                // As claim(typeName:id:): a full generation retires the older
                // one (this write's earlier ids move with it and stay known).
                if state.currentCount >= generationSize { state.rotate() }
            }
            return nil
        }
    }

    /// Forgets ids claimed but never stored (or stored and then discarded).
    package func forget(_ entries: [(typeName: String, id: ObjectId)]) {
        state.withLock { state in
            for entry in entries { state.remove(fingerprint(entry.id, type: state.number(of: entry.typeName))) }
        }
    }

    /// Forgets the ids of `batch`, claimed but never stored (its commit failed).
    package func forget(_ batch: EncodedBatch) {
        state.withLock { state in
            for run in batch.runs {
                let type = state.number(of: run.typeName)
                run.ids.withUnsafeBytes { ids in
                    for i in 0..<run.count {
                        let print = fingerprint(
                            ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: ids[i * 12..<i * 12 + 12])),
                            type: type
                        )
                        state.remove(print)
                    }
                }
            }
        }
    }

    /// Remembers stored ids (seeding), newest last, without refusing any.
    func remember(typeName: String, ids: UnsafeRawBufferPointer) {
        var offset = 0
        while offset + 12 <= ids.count {
            _ = claim(
                typeName: typeName,
                id: ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12]))
            )
            offset += 12
        }
    }
}

extension DurableQueue {
    /// Ids per generation of ``recentIDs()``: an id is remembered for at
    /// least this many later readings (and at most twice as many), in a
    /// table of 1 MiB.
    package static let recentIDGeneration = 32_768

    /// The window if ``recentIDs()`` has made it (nothing claimed otherwise).
    package var existingRecentIDs: RecentIDs? { state.withLock { $0.recentIDs } }

    /// The queue's window of recent `_id`s, made on first use and seeded
    /// with the ids of its newest stored segments (up to one generation),
    /// so what is still queued after a restart is known.
    package func recentIDs() throws -> RecentIDs {
        try state.withLock { state in
            if let made = state.recentIDs { return made }
            let store = try state.openStore(configuration.location.description)
            let recent = RecentIDs(generationSize: Self.recentIDGeneration)
            for segment in try store.newestIDs(limit: Self.recentIDGeneration).reversed() {
                segment.ids.withUnsafeBytes { recent.remember(typeName: segment.type, ids: $0) }
            }
            state.recentIDs = recent
            return recent
        }
    }
}
