import Testing

@testable import EdgeIngestCore

/// ``ReceivedIDFilter``: never a false negative, few false positives at
/// capacity, growing when full, "maybe" for everything past its limit.
@Suite struct ReceivedIDFilterTests {
    /// ObjectId-shaped keys: a shared timestamp prefix, then a counter.
    static func key(_ n: Int, tenant: String = "") -> [UInt8] {
        var bytes: [UInt8] = [0x67, 0x41, 0x2a, 0x10, 0x9e, 0x37, 0x79, 0xb9]
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((n >> shift) & 0xff)) }
        return bytes + Array(tenant.utf8)
    }

    @Test func everyInsertedKeyIsFoundAndFewOthersAre() {
        var filter = ReceivedIDFilter(capacity: 100_000)
        for n in 0..<100_000 { Self.key(n).withUnsafeBytes { filter.insert($0) } }
        #expect((0..<100_000).allSatisfy { n in Self.key(n).withUnsafeBytes { filter.mightContain($0) } })
        let falsePositives = (100_000..<200_000).filter { n in Self.key(n).withUnsafeBytes { filter.mightContain($0) } }
        #expect(falsePositives.count < 4_000, "\(falsePositives.count) false positives in 100,000")
        // Another tenant's key with the same id is another key.
        let others = (0..<10_000).filter { n in Self.key(n, tenant: "key-b").withUnsafeBytes { filter.mightContain($0) }
        }
        #expect(others.count < 400)
    }

    @Test func aFullFilterGrowsAndStillFindsEveryKeyWithFewOthers() {
        var filter = ReceivedIDFilter(capacity: 10_000)
        for n in 0..<300_000 { Self.key(n).withUnsafeBytes { filter.insert($0) } }
        #expect(filter.layerCount == 4, "10,000 + 40,000 + 160,000 + 640,000 keys")
        #expect(!filter.isSaturated)
        #expect((0..<300_000).allSatisfy { n in Self.key(n).withUnsafeBytes { filter.mightContain($0) } })
        let falsePositives = (300_000..<400_000).filter { n in Self.key(n).withUnsafeBytes { filter.mightContain($0) } }
        // ~2 % per full layer: three full, the fourth not; under 10 %.
        #expect(falsePositives.count < 10_000, "\(falsePositives.count) false positives in 100,000")
    }

    @Test func aFilterAtItsLimitAnswersMaybe() {
        var filter = ReceivedIDFilter(capacity: 10, limit: 30)
        for n in 0..<30 { Self.key(n).withUnsafeBytes { filter.insert($0) } }
        #expect(!filter.isSaturated)
        #expect(filter.layerCount == 2, "10, then the 20 left of the limit")  // not 4 × 10
        Self.key(30).withUnsafeBytes { filter.insert($0) }
        #expect(filter.isSaturated)
        #expect(Self.key(999).withUnsafeBytes { filter.mightContain($0) })
    }

    @Test func theNextCapacityFollowsTheCountWithinBounds() {
        #expect(ReceivedIDFilter.capacity(after: 0) == ReceivedIDFilter.minimumCapacity)
        #expect(ReceivedIDFilter.capacity(after: 3_000_000) == 6_000_000)
        #expect(ReceivedIDFilter.capacity(after: 1 << 30) == ReceivedIDFilter.maximumCapacity)
    }
}
