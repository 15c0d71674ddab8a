/// A Bloom filter over one generation of received-id bucket keys
/// (``ReceivedIDs``: the account and an id less its last 7 bits, one per
/// group of ids): "certainly not received" lets a new bucket skip its
/// SQLite lookup (docs/BENCHMARKS.md, "A fleet through one gateway"). 8 bits and 6 probes per key: about 2.5 %
/// false positives at capacity, and a false positive only costs the lookup.
///
/// Full, it grows: a new layer of 4 times the last one's capacity takes
/// the next keys, and a key is looked for in every layer (a scalable Bloom
/// filter: each full layer adds ~2.5 % false positives, and costs a cache
/// miss per key looked for: 4 times, not 2, so the filter of a gateway's
/// first window, sized before its rate is known, has half the layers;
/// from the smallest start, 1 Mi, four layers reach the limit: ~10 % at
/// the most), up to
/// `limit` keys in all (32 Mi: 32 MiB). Past
/// that it is **saturated** and answers "maybe" for every key (the lookup
/// is made, as without a filter); the next generation's filter starts
/// sized from this one's count. Never a false negative: a key inserted is
/// always found.
///
/// ```swift
/// var filter = ReceivedIDFilter(capacity: 1 << 20)
/// filter.insert(key)
/// if !filter.mightContain(other) { /* not received: no lookup */ }
/// ```
struct ReceivedIDFilter {
    static let bitsPerKey = 8
    /// How much larger each new layer is than the last.
    static let growth = 4
    static let probes = 6
    /// Bounds for ``capacity(after:)`` and the default limit: 1 Mi keys
    /// (1 MiB) to 32 Mi (32 MiB).
    static let minimumCapacity = 1 << 20
    static let maximumCapacity = 1 << 25

    /// One Bloom filter of `capacity` keys, **blocked**: a key's probes
    /// all fall in one 64-byte block (one cache miss per key and layer
    /// instead of one per probe; a little more false positives, ~2.5 %).
    private struct Layer {
        let capacity: Int
        var count = 0
        /// 8 words (512 bits) per block.
        var words: [UInt64]
        let blockCount: UInt64

        init(capacity: Int) {
            self.capacity = capacity
            let blocks = max(1, (capacity * ReceivedIDFilter.bitsPerKey + 511) / 512)
            words = [UInt64](repeating: 0, count: blocks * 8)
            blockCount = UInt64(blocks)
        }

        /// The first word of the key's block: `h1` mapped onto the blocks
        /// by a multiply (no division).
        private func base(_ h1: UInt64) -> Int {
            Int(h1.multipliedFullWidth(by: blockCount).high) &* 8
        }

        // Through the words' buffer: one uniqueness check per key, not one
        // per probe (taken per received id).
        mutating func insert(_ h1: UInt64, _ h2: UInt64) {
            count += 1
            let base = base(h1)
            words.withUnsafeMutableBufferPointer { words in
                var bits = h2
                for _ in 0..<ReceivedIDFilter.probes {
                    words[base &+ Int((bits >> 6) & 7)] |= 1 << (bits & 63)
                    bits >>= 9
                }
            }
        }

        func mightContain(_ h1: UInt64, _ h2: UInt64) -> Bool {
            let base = base(h1)
            return words.withUnsafeBufferPointer { words in
                var bits = h2
                for _ in 0..<ReceivedIDFilter.probes {
                    if words[base &+ Int((bits >> 6) & 7)] & (1 << (bits & 63)) == 0 { return false }
                    bits >>= 9
                }
                return true
            }
        }
    }

    /// Keys in all layers together at the most.
    let limit: Int
    private(set) var count = 0
    private var layers: [Layer]
    /// The layers' capacities summed.
    private var capacity: Int

    /// - Parameters:
    ///   - capacity: the first layer's keys.
    ///   - limit: keys in all, growing included.
    init(capacity: Int, limit: Int = maximumCapacity) {
        self.limit = max(capacity, limit)
        layers = [Layer(capacity: capacity)]
        self.capacity = capacity
    }

    var isSaturated: Bool { count > limit }

    /// Layers so far (the first, and one per growth).
    var layerCount: Int { layers.count }

    /// The capacity for the generation after one that held `count` keys.
    static func capacity(after count: Int) -> Int {
        min(maximumCapacity, max(minimumCapacity, count * 2))
    }

    mutating func insert(_ key: UnsafeRawBufferPointer) {
        insert(hashes: Self.hashes(key))
    }

    /// ``insert(_:)`` with the key's ``hashes(_:)``, computed once for
    /// several filters or calls.
    mutating func insert(hashes: Hashes) {
        count += 1
        guard !isSaturated else { return }
        if layers[layers.count - 1].count == layers[layers.count - 1].capacity {
            let next = min(Self.growth * layers[layers.count - 1].capacity, limit - capacity)
            guard next > 0 else {
                count = limit + 1  // no room to grow: saturated from here
                return
            }
            layers.append(Layer(capacity: next))
            capacity += next
        }
        layers[layers.count - 1].insert(hashes.0, hashes.1)
    }

    /// false: the key was certainly not inserted; true: it may have been.
    func mightContain(_ key: UnsafeRawBufferPointer) -> Bool {
        guard count > 0 else { return false }  // empty: no memory touched
        return mightContain(hashes: Self.hashes(key))
    }

    /// ``mightContain(_:)`` with the key's ``hashes(_:)``.
    func mightContain(hashes: Hashes) -> Bool {
        guard count > 0 else { return false }
        guard !isSaturated else { return true }
        for layer in layers where layer.mightContain(hashes.0, hashes.1) { return true }
        return false
    }

    typealias Hashes = (UInt64, UInt64)

    /// Two 64-bit hashes (SplitMix64's finalizer over each word, then once more):
    /// ObjectIds share their leading timestamp bytes, so the mixing matters.
    static func hashes(_ key: UnsafeRawBufferPointer) -> Hashes {
        // 8 bytes at a time (a key is an account's name and 12 id bytes:
        // taken for every received id), each word mixed in.
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(key.count)
        var offset = 0
        while offset + 8 <= key.count {
            h = mix(h ^ key.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        while offset < key.count {
            tail = tail << 8 | UInt64(key[offset])
            offset += 1
        }
        h = mix(h ^ tail)
        return (h, mix(h ^ 0x9e37_79b9_7f4a_7c15))
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
