/// A Bloom filter over one generation of received-id bucket keys
/// (``ReceivedIDs``: the account and an id less its last 7 bits, one per
/// group of ids): "certainly not received" lets a new bucket skip its
/// SQLite lookup (docs/BENCHMARKS.md, "A fleet through one gateway"). 8 bits and 6 probes per key: about 2.5 %
/// false positives at capacity, and a false positive only costs the lookup.
///
/// Full, it grows: a new layer of twice the last one's capacity takes the
/// next keys, and a key is looked for in every layer (a scalable Bloom
/// filter: each full layer adds ~2.5 % false positives; from the smallest
/// start, 1 Mi, six layers reach the limit: ~15 % at the most), up to
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

        mutating func insert(_ h1: UInt64, _ h2: UInt64) {
            count += 1
            let base = base(h1)
            var bits = h2
            for _ in 0..<ReceivedIDFilter.probes {
                words[base &+ Int((bits >> 6) & 7)] |= 1 << (bits & 63)
                bits >>= 9
            }
        }

        func mightContain(_ h1: UInt64, _ h2: UInt64) -> Bool {
            let base = base(h1)
            var bits = h2
            for _ in 0..<ReceivedIDFilter.probes {
                if words[base &+ Int((bits >> 6) & 7)] & (1 << (bits & 63)) == 0 { return false }
                bits >>= 9
            }
            return true
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
        count += 1
        guard !isSaturated else { return }
        if layers[layers.count - 1].count == layers[layers.count - 1].capacity {
            let next = min(2 * layers[layers.count - 1].capacity, limit - capacity)
            guard next > 0 else {
                count = limit + 1  // no room to grow: saturated from here
                return
            }
            layers.append(Layer(capacity: next))
            capacity += next
        }
        let (h1, h2) = Self.hashes(key)
        layers[layers.count - 1].insert(h1, h2)
    }

    /// false: the key was certainly not inserted; true: it may have been.
    func mightContain(_ key: UnsafeRawBufferPointer) -> Bool {
        guard !isSaturated else { return true }
        let (h1, h2) = Self.hashes(key)
        for layer in layers where layer.mightContain(h1, h2) { return true }
        return false
    }

    /// Two independent 64-bit hashes (FNV-1a, then two SplitMix64 finalizers):
    /// ObjectIds share their leading timestamp bytes, so the mixing matters.
    private static func hashes(_ key: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01b3
        }
        return (mix(h), mix(h ^ 0x9e37_79b9_7f4a_7c15))
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
