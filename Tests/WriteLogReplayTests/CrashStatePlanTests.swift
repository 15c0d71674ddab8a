import Foundation
import TestSupport
import Testing

@testable import WriteLogReplay

@Suite struct CrashStatePlanTests {
    /// W0 F1 Ma2 W3 W4 U5 F6 Mb7 W8 F9: writes W, flushes F, a FUA write U, marks M.
    func sampleLog(in directory: TemporaryDirectory) throws -> WriteLog {
        var builder = LogBuilder()
        builder.write(0, 1, fill: 1)
        builder.flush()
        builder.mark("a")
        builder.write(1, 1, fill: 2)
        builder.write(2, 1, fill: 3)
        builder.write(3, 1, fill: 4, .fua)
        builder.flush()
        builder.mark("b")
        builder.write(4, 1, fill: 5)
        builder.flush()
        return try WriteLog(path: builder.save(in: directory))
    }

    @Test func aStateAtEveryFlushAndFUAWithTheMarksIssuedBeforeIt() throws {
        let log = try sampleLog(in: TemporaryDirectory())
        var random = SplitMix64(seed: 1)
        let barriers = CrashStatePlan.states(of: log, subsetsPerInterval: 0, using: &random)
        #expect(barriers.map(\.name) == ["barrier@1", "barrier@5", "barrier@6", "barrier@9"])
        #expect(barriers.map(\.durablePrefix) == [2, 6, 7, 10])
        // After F1 the test issued mark a before any other write: a must hold there.
        #expect(barriers.map(\.requiredMark) == ["a", "a", "b", "b"])
        #expect(barriers.allSatisfy { $0.extraEntries.isEmpty && $0.kind == .barrier })
    }

    @Test func subsetsDropOnlyUnflushedWritesAndKeepFUAWrites() throws {
        let log = try sampleLog(in: TemporaryDirectory())
        var random = SplitMix64(seed: 7)
        let states = CrashStatePlan.states(of: log, subsetsPerInterval: 10, using: &random)
        let subsets = states.filter { $0.kind == .unflushedSubset }
        // Before F1: W0 alone (one proper subset: none of it).
        let first = subsets.filter { $0.durablePrefix == 0 }
        #expect(first.map(\.extraEntries) == [[]])
        #expect(first.map(\.requiredMark) == [nil])
        // Between F1 and F6: W3, W4 cached, U5 always there; 3 proper subsets of {W3, W4}.
        let middle = subsets.filter { $0.durablePrefix == 2 }
        #expect(Set(middle.map(\.extraEntries)) == [[5], [3, 5], [4, 5]])
        #expect(middle.allSatisfy { $0.requiredMark == "a" }, "the cut came before F6 completed: b was not yet issued")
        // Between F6 and F9: W8 alone.
        #expect(subsets.filter { $0.durablePrefix == 7 }.map(\.extraEntries) == [[]])
        #expect(subsets.filter { $0.durablePrefix == 7 }.map(\.requiredMark) == ["b"])
        // In replay order: prefixes never go back.
        #expect(states.map(\.durablePrefix) == states.map(\.durablePrefix).sorted())
    }

    @Test func manyUnflushedWritesGiveAtMostTheSubsetsAskedForAndTheSameOnesPerSeed() throws {
        let directory = try TemporaryDirectory()
        var builder = LogBuilder()
        for sector in 0..<30 { builder.write(UInt64(sector), 1, fill: 1) }
        builder.flush()
        let log = try WriteLog(path: builder.save(in: directory))
        var first = SplitMix64(seed: 45)
        var second = SplitMix64(seed: 45)
        var other = SplitMix64(seed: 46)
        let states = CrashStatePlan.states(of: log, subsetsPerInterval: 6, using: &first)
        let subsets = states.filter { $0.kind == .unflushedSubset }
        #expect(subsets.count == 6)
        #expect(Set(subsets.map(\.extraEntries)).count == 6, "distinct subsets")
        #expect(
            subsets.allSatisfy { $0.extraEntries.count < 30 && $0.extraEntries.allSatisfy { (0..<30).contains($0) } }
        )
        #expect(CrashStatePlan.states(of: log, subsetsPerInterval: 6, using: &second) == states)
        #expect(CrashStatePlan.states(of: log, subsetsPerInterval: 6, using: &other) != states)
    }
}
