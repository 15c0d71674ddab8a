import TestSupport
import Testing

@testable import EdgeIngestCore

@Suite struct OverflowPlanTests {
    typealias Segment = OverflowPlan.StoredSegment

    static let stored = [Segment(id: 1, records: 3, bytes: 300), Segment(id: 2, records: 3, bytes: 300)]

    @Test(
        arguments: [
            // policy, maxRecords, maxBytes, queued records/bytes, incoming sizes → accept range, dropped segments, dropped incoming, wait
            (OverflowPolicy.block, 10, nil, 6, 600, [100, 100], 0, 2, [Int64](), 0, false),
            (.block, 7, nil, 6, 600, [100, 100], 0, 2, [], 0, true),
            (.dropNewest, 7, nil, 6, 600, [100, 100, 100], 0, 1, [], 2, false),
            (.dropNewest, nil, 750, 6, 600, [100, 100], 0, 1, [], 1, false),
            (.dropNewest, 6, nil, 6, 600, [100], 0, 0, [], 1, false),
            (.dropOldest, 7, nil, 6, 600, [100, 100], 0, 2, [1], 0, false),
            (.dropOldest, 4, nil, 6, 600, [100, 100], 0, 2, [1, 2], 0, false),
            (.dropOldest, 1, nil, 6, 600, [100, 100, 100], 2, 3, [1, 2], 2, false),
            (.dropOldest, nil, 650, 6, 600, [100], 0, 1, [1], 0, false),
        ] as [(OverflowPolicy, Int64?, Int64?, Int64, Int64, [Int], Int, Int, [Int64], Int, Bool)]
    )
    func planTable(
        policy: OverflowPolicy,
        maxRecords: Int64?,
        maxBytes: Int64?,
        queuedRecords: Int64,
        queuedBytes: Int64,
        incoming: [Int],
        from: Int,
        to: Int,
        dropSegments: [Int64],
        droppedIncoming: Int,
        wait: Bool
    ) {
        let plan = OverflowPlan.make(
            policy: policy,
            limits: .init(maxRecords: maxRecords, maxBytes: maxBytes),
            queuedRecords: queuedRecords,
            queuedBytes: queuedBytes,
            incomingBytes: incoming,
            droppable: { Self.stored }
        )
        #expect(plan.mustWait == wait)
        if !wait {
            #expect(plan.acceptFrom == from)
            #expect(plan.acceptTo == to)
            #expect(plan.dropSegments == dropSegments)
            #expect(plan.droppedIncoming == droppedIncoming)
            #expect(plan.droppedStoredRecords == Int64(dropSegments.count * 3))
        }
    }
}

@Suite struct OverflowPolicyTests {
    func boundedQueue(_ dir: TemporaryDirectory, _ policy: OverflowPolicy, maxRecords: Int64) throws -> DurableQueue {
        var configuration = try fileConfiguration(dir)
        configuration.maxRecords = maxRecords
        configuration.overflowPolicy = policy
        return try DurableQueue.open(configuration)
    }

    @Test func dropNewestKeepsTheOldAndCountsTheRest() async throws {
        let dir = try TemporaryDirectory()
        let queue = try boundedQueue(dir, .dropNewest, maxRecords: 10)
        let records = try weatherRecords(15)
        let first = try await queue.append(Array(records[..<8]))
        let second = try await queue.append(Array(records[8...]))
        #expect(first.accepted == 8)
        #expect(second.accepted == 2)
        #expect(second.droppedIncoming == 5)
        let stats = try queue.statistics()
        #expect(stats.droppedByReason == ["overflow_drop_newest": 5])
        #expect(try drain(queue) == records[..<10].map(\.jsonString))
    }

    @Test func dropOldestKeepsTheNewAndNeverDropsALeasedBatch() async throws {
        let dir = try TemporaryDirectory()
        let queue = try boundedQueue(dir, .dropOldest, maxRecords: 10)
        let records = try weatherRecords(20)
        try await queue.append(Array(records[0..<4]))
        try await queue.append(Array(records[4..<8]))
        let inFlight = try #require(try queue.take(maxRecords: 4))  // the first batch is being uploaded
        let result = try await queue.append(Array(records[8..<14]))
        #expect(result.droppedStored == 4)  // the second batch, not the leased one
        try queue.acknowledge(inFlight)
        let stats = try queue.statistics()
        #expect(stats.droppedByReason == ["overflow_drop_oldest": 4])
        #expect(stats.queuedRecords == 6)
        #expect(try drain(queue) == records[8..<14].map(\.jsonString))
        // Every appended record is acknowledged or counted as dropped.
        let end = try queue.statistics()
        #expect(end.appendedTotal == end.acknowledgedTotal + end.droppedTotal)
    }

    @Test func blockWaitsForTheUploaderAndLosesNothing() async throws {
        let dir = try TemporaryDirectory()
        let queue = try boundedQueue(dir, .block, maxRecords: 10)
        let records = try weatherRecords(25)
        try await queue.append(Array(records[0..<10]))
        let producer = Task { try await queue.append(Array(records[10..<25].prefix(5))) }
        // The producer cannot finish until space is freed.
        try await Task.sleep(for: .milliseconds(50))
        #expect(try queue.statistics().queuedRecords == 10)
        let lease = try #require(try queue.take(maxRecords: 5))
        try queue.acknowledge(lease)
        let result = try await producer.value
        #expect(result.accepted == 5)
        #expect(try queue.statistics().droppedTotal == 0)
        #expect(try drain(queue) == records[5..<15].map(\.jsonString))
    }

    @Test func blockedProducerCanBeCancelledAndStoresNothing() async throws {
        let dir = try TemporaryDirectory()
        let queue = try boundedQueue(dir, .block, maxRecords: 2)
        try await queue.append(try weatherRecords(2))
        let producer = Task { try await queue.append(try weatherRecords(1)) }
        producer.cancel()
        await #expect(throws: CancellationError.self) { try await producer.value }
        #expect(try queue.statistics().queuedRecords == 2)
    }

    @Test func blockRefusesABatchThatCanNeverFit() async throws {
        let dir = try TemporaryDirectory()
        let queue = try boundedQueue(dir, .block, maxRecords: 3)
        let error = try await #require(throws: EdgeIngestError.self) { try await queue.append(try weatherRecords(4)) }
        #expect(error.code == .queueFull)
        #expect(error.message.contains("can never fit"))
        #expect(error.message.contains("max_records 3"))
    }

    @Test func dropCountersSurviveRestart() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try boundedQueue(dir, .dropNewest, maxRecords: 2)
            try await queue.append(try weatherRecords(5))
            queue.close()
        }
        let queue = try boundedQueue(dir, .dropNewest, maxRecords: 2)
        #expect(try queue.statistics().droppedByReason == ["overflow_drop_newest": 3])
        // Accepted, then dropped: appended counts all five (docs/QUEUE.md invariant 2).
        #expect(try queue.statistics().appendedTotal == 5)
    }

    @Test func maxBytesBoundsQueuedBytes() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        configuration.maxBytes = 2048
        configuration.overflowPolicy = .dropNewest
        let queue = try DurableQueue.open(configuration)
        try await queue.append(try weatherRecords(100))
        let stats = try queue.statistics()
        #expect(stats.queuedBytes <= 2048)
        #expect(stats.queuedBytes > 2048 - 200)
        #expect(stats.queuedRecords + stats.droppedTotal == 100)
    }
}
