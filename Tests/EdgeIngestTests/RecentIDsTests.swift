import EdgeIngestModel
import Testing

@testable import EdgeIngestCore

/// Proves the window of recent `_id`s: an id is refused while it is in
/// either generation (at least `generationSize` later ids), forgotten
/// after two rotations, kept apart per record type, and forgotten on
/// request (a batch that was never stored).
@Suite struct RecentIDsTests {
    static func id(_ n: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[11 - i] = UInt8(truncatingIfNeeded: n >> (8 * i)) }
        return bytes
    }

    static func claim(_ recent: RecentIDs, _ n: Int, type: String = "T") -> Bool {
        recent.claim(typeName: type, id: ObjectId(bytes: id(n))!)
    }

    @Test func anIDIsRefusedForAtLeastOneGenerationAndForgottenAfterTwo() {
        let recent = RecentIDs(generationSize: 4)
        #expect(Self.claim(recent, 0))
        #expect(!Self.claim(recent, 0))
        for n in 1..<4 { #expect(Self.claim(recent, n)) }  // 0…3: a full generation rotates
        #expect(!Self.claim(recent, 0), "still in the previous generation")
        for n in 4..<8 { #expect(Self.claim(recent, n)) }  // a second rotation
        #expect(Self.claim(recent, 0), "forgotten after two generations")
    }

    @Test func typesAreSeparateIDSpaces() {
        let recent = RecentIDs(generationSize: 100)
        #expect(Self.claim(recent, 7, type: "A"))
        #expect(Self.claim(recent, 7, type: "B"))
        #expect(!Self.claim(recent, 7, type: "A"))
    }

    @Test func aBatchThatWasNeverStoredIsForgotten() throws {
        let recent = RecentIDs(generationSize: 100)
        #expect(Self.claim(recent, 1) && Self.claim(recent, 2) && Self.claim(recent, 3))
        var batch = EncodedBatch()
        batch.runs = [
            .init(typeName: "T", ids: Self.id(2) + Self.id(3), payload: Array("{}\n{}\n".utf8), ends: [3, 6])
        ]
        recent.forget(batch)
        #expect(!Self.claim(recent, 1))
        #expect(Self.claim(recent, 2) && Self.claim(recent, 3))
    }

    /// The table against a plain model (two `Set`s) over many random
    /// claims and forgets in a small id space (long probe chains, many
    /// deletions in the middle of them): the same answer every time.
    @Test func theTableAnswersAsTwoSetsWould() {
        var generator = SystemRandomNumberGenerator()
        for generationSize in [1, 3, 16, 64] {
            let recent = RecentIDs(generationSize: generationSize)
            var current = Set<Int>()
            var previous = Set<Int>()
            for step in 0..<20_000 {
                let n = Int.random(in: 0..<(generationSize * 3), using: &generator)
                if step % 7 == 3 {
                    var batch = EncodedBatch()
                    batch.runs = [.init(typeName: "T", ids: Self.id(n), payload: Array("{}\n".utf8), ends: [3])]
                    recent.forget(batch)
                    current.remove(n)
                    previous.remove(n)
                    continue
                }
                let expected = !current.contains(n) && !previous.contains(n)
                if expected {
                    current.insert(n)
                    if current.count >= generationSize {
                        previous = current
                        current = []
                    }
                }
                let got = Self.claim(recent, n)
                #expect(got == expected, "generation \(generationSize), step \(step), id \(n)")
                if got != expected { return }
            }
        }
    }

    /// A batch claimed at once answers as claiming its ids one by one
    /// would: repeats of earlier batches and repeats within it, only for
    /// the records asked about.
    @Test func aBatchClaimAnswersAsOneByOne() {
        let recent = RecentIDs(generationSize: 1000)
        #expect(Self.claim(recent, 5))
        var batch = EncodedBatch()
        let ids = [1, 5, 2, 1, 9, 5]
        batch.runs = [
            .init(
                typeName: "T",
                ids: ids.flatMap { Self.id($0) },
                payload: Array(String(repeating: "{}\n", count: ids.count).utf8),
                ends: (1...ids.count).map { $0 * 3 }
            )
        ]
        // Record 4 (id 9) is not asked about: it had a generated id.
        #expect(recent.claim(batch, indices: [0, 1, 2, 3, 5]) == [1, 3, 4])
        #expect(Self.claim(recent, 9))
        #expect(!Self.claim(recent, 2))
    }
}
