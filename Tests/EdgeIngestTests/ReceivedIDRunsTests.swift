import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// Ids with nothing in common (random ids: no two in one 128-id bucket)
/// are pending first — in memory and in `received_pending`, written with
/// their batch — and folded into runs about once a second. They must be
/// found at every stage: pending, folded, after a crash before the fold,
/// after a close, and tell a re-send from a conflict in each.
@Suite struct ReceivedIDRunsTests {
    static let receipt = Receipt(dedupWindowMilliseconds: 3_600_000, session: nil, tenant: "key-a")

    /// `count` readings whose ids share no bucket, over 4 id prefixes (runs).
    static func scattered(_ count: Int, device: String = "D", from first: Int = 0) throws -> [Record] {
        try (first..<first + count).map { i in
            let id = "69000000" + String(format: "%02x", i % 4) + String(format: "%014x", i * 1_000_003)
            return try declaredWeatherSensor().validate(anyValues: [
                "_id": id, "deviceId": device, "temperatureInFahrenheit": 66.7,
                "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
            ])
        }
    }

    static func stored(_ accepted: Int, duplicates: Int = 0) -> ReceiveOutcome {
        .stored(AppendResult(accepted: accepted, droppedIncoming: 0, droppedStored: 0, duplicates: duplicates))
    }

    /// The queue file (and its WAL) as a crash would leave it: copied while open.
    static func crashCopy(of dir: TemporaryDirectory) throws -> TemporaryDirectory {
        let copy = try TemporaryDirectory()
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: dir.file("queue.sqlite" + suffix)) {
            try FileManager.default.copyItem(
                atPath: dir.file("queue.sqlite" + suffix),
                toPath: copy.file("queue.sqlite" + suffix)
            )
        }
        return copy
    }

    @Test func idsStillPendingAtACrashAreRememberedAfterIt() throws {
        let dir = try TemporaryDirectory()
        let records = try Self.scattered(50)
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.receive(records, receipt: Self.receipt) == Self.stored(50))
        #expect(try sqlite3(dir.file("queue.sqlite"), "SELECT count(*) FROM received_pending") == "1")
        #expect(try sqlite3(dir.file("queue.sqlite"), "SELECT count(*) FROM received_runs_0") == "0")
        let copy = try Self.crashCopy(of: dir)
        queue.close()

        let restarted = try DurableQueue.open(try fileConfiguration(copy))
        let changed = try Self.scattered(1, device: "ELSEWHERE", from: 7)
        guard case .stored(let result) = try restarted.receive(records + changed, receipt: Self.receipt) else {
            Issue.record("not stored")
            return
        }
        #expect(result.accepted == 0 && result.duplicates == 50 && result.conflicts == [50])
        // Another account's ids are its own.
        let other = Receipt(dedupWindowMilliseconds: 3_600_000, session: nil, tenant: "key-b")
        #expect(try restarted.receive(records, receipt: other) == Self.stored(50))
    }

    @Test func pendingIDsAreFoldedIntoRunsAndFoundThere() throws {
        let dir = try TemporaryDirectory()
        let first = try Self.scattered(40)
        let second = try Self.scattered(40, from: 40)
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.receive(first, receipt: Self.receipt) == Self.stored(40))
        usleep(1_100_000)  // past the fold interval: the next batch folds the first
        #expect(try queue.receive(second, receipt: Self.receipt) == Self.stored(40))
        let path = dir.file("queue.sqlite")
        #expect(try sqlite3(path, "SELECT count(*), sum(length(ids)) / 12 FROM received_pending") == "1|40")
        // The first batch's 40 ids in 4 runs (one per prefix), 7 bytes each.
        #expect(try sqlite3(path, "SELECT count(*), sum(length(ids)) / 7 FROM received_runs_0") == "4|40")

        // Folded and pending alike: re-sends, and a conflict in each.
        let changedFolded = try Self.scattered(1, device: "ELSEWHERE", from: 3)
        let changedPending = try Self.scattered(1, device: "ELSEWHERE", from: 45)
        guard
            case .stored(let result) = try queue.receive(
                first + second + changedFolded + changedPending,
                receipt: Self.receipt
            )
        else {
            Issue.record("not stored")
            return
        }
        #expect(result.accepted == 0 && result.duplicates == 80 && result.conflicts == [80, 81])
        // Closing folds the rest; reopened (runs there: no filter), the same.
        queue.close()
        #expect(try sqlite3(path, "SELECT count(*) FROM received_pending") == "0")
        #expect(try sqlite3(path, "SELECT sum(length(ids)) / 7 FROM received_runs_0") == "80")
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try reopened.receive(second + first, receipt: Self.receipt) == Self.stored(0, duplicates: 80))
        #expect(try reopened.receive(try Self.scattered(3, from: 80), receipt: Self.receipt) == Self.stored(3))
        #expect(try drain(reopened).count == 83)
    }

    @Test func aRotationFoldsThePendingIDsIntoTheGenerationEnding() throws {
        let dir = try TemporaryDirectory()
        let records = try Self.scattered(20)
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let window = Receipt(dedupWindowMilliseconds: 50, session: nil, tenant: "key-a")
        #expect(try queue.receive(records, receipt: window) == Self.stored(20))
        usleep(60_000)
        // Rotates: the 20 pending ids go into the ending generation, still looked up.
        #expect(try queue.receive(records, receipt: window) == Self.stored(0, duplicates: 20))
        let path = dir.file("queue.sqlite")
        #expect(try sqlite3(path, "SELECT sum(length(ids)) / 7 FROM received_runs_0") == "20")
        #expect(try sqlite3(path, "SELECT count(*) FROM received_pending") == "0")
        usleep(60_000)
        // Still there (the older generation); then the second rotation empties it.
        #expect(try queue.receive(records, receipt: window) == Self.stored(0, duplicates: 20))
        #expect(try sqlite3(path, "SELECT count(*) FROM received_runs_0") == "0")
        // Forgotten: stored again.
        #expect(try queue.receive(records, receipt: window) == Self.stored(20))
    }

    @Test func damagedRunsAndPendingRowsAreFoundAndForgotten() throws {
        let dir = try TemporaryDirectory()
        let records = try Self.scattered(8)  // 4 runs of 2 ids
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive(records, receipt: Self.receipt) == Self.stored(8))
            queue.close()
        }
        _ = try sqlite3(
            dir.file("queue.sqlite"),
            """
            UPDATE received_runs_0 SET contents = substr(contents, 1, 3) WHERE id = (SELECT min(id) FROM received_runs_0);
            INSERT INTO received_pending(tenant, ids, contents) VALUES(X'', X'00112233445566778899AABBCC', X'00000000');
            """
        )
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let found = try queue.verify()
        #expect(
            found.damage.map(\.problem).sorted() == [
                "it has 3 bytes of contents for 2 ids", "its ids are 13 bytes, not a positive multiple of 12",
            ]
        )
        #expect(found.damage.allSatisfy { $0.records == 0 })
        #expect(found.gatewayMemoryRowsChecked == 5)
        let repair = try queue.repair()
        #expect(repair.gatewayMemoryForgotten == 2)
        #expect(try queue.verify().isIntact)
        // The damaged run's 2 ids are forgotten (stored again); the others are not.
        #expect(try queue.receive(records, receipt: Self.receipt) == Self.stored(2, duplicates: 6))
    }

    /// A batch whose transaction rolls back after its ids went into memory
    /// (here: its `received_pending` row refused by a trigger) leaves
    /// nothing behind: neither the next batches nor the fold at close take
    /// its ids for received ones.
    @Test func aRolledBackBatchIsNotRememberedByTheFoldAtClose() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        let committed = try Self.scattered(10)
        let refused = try Self.scattered(10, from: 10)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive(committed, receipt: Self.receipt) == Self.stored(10))
            _ = try sqlite3(
                path,
                "CREATE TRIGGER refuse BEFORE INSERT ON received_pending BEGIN SELECT RAISE(ABORT, 'refused'); END;"
            )
            #expect(throws: (any Error).self) { try queue.receive(refused, receipt: Self.receipt) }
            _ = try sqlite3(path, "DROP TRIGGER refuse")
            queue.close()  // folds
        }
        #expect(try sqlite3(path, "SELECT count(*) FROM received_pending") == "0")
        #expect(try sqlite3(path, "SELECT sum(length(ids)) / 7 FROM received_runs_0") == "10")
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try reopened.receive(refused + committed, receipt: Self.receipt) == Self.stored(10, duplicates: 10))
        #expect(try drain(reopened).count == 20)
    }

    /// A fold into a run whose row is damaged (contents cut short: merging
    /// would read past them) replaces the row with the new ids, and the
    /// loss is kept for status.
    @Test func aFoldReplacesADamagedRunAndSaysSo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive(try Self.scattered(8), receipt: Self.receipt) == Self.stored(8))
            queue.close()
        }
        _ = try sqlite3(path, "UPDATE received_runs_0 SET contents = X''")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.statistics().gatewayMemoryForgottenAt == nil)
        let later = try Self.scattered(8, from: 8)  // the same 4 runs
        #expect(try queue.receive(later, receipt: Self.receipt) == Self.stored(8))
        queue.close()
        #expect(try sqlite3(path, "SELECT count(*), sum(length(ids)) / 7 FROM received_runs_0") == "4|8")
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try reopened.statistics().gatewayMemoryForgottenAt != nil)
        #expect(try reopened.verify().isIntact)
        #expect(try reopened.receive(later, receipt: Self.receipt) == Self.stored(0, duplicates: 8))
    }

    // MARK: The run format

    @Test func aRunMergesAndFindsItsIDsInOrder() throws {
        var merged: (ids: [UInt8], contents: [UInt8]) = ([], [])
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        ReceivedIDRun.merge(ids: none, contents: none, with: [(5, 50), (9, 90)][...], into: &merged)
        let first = merged
        try first.ids.withUnsafeBytes { ids in
            try first.contents.withUnsafeBytes { contents in
                ReceivedIDRun.merge(
                    ids: ids,
                    contents: contents,
                    with: [(1, 10), (5, 55), (7, 70)][...],
                    into: &merged
                )
                #expect(
                    ReceivedIDRun.damage(
                        key: UnsafeRawBufferPointer(start: nil, count: 0),
                        ids: ids,
                        contents: contents
                    ) != nil
                )
                _ = try #require(ReceivedIDRun.find(9, ids: ids, contents: contents))
            }
        }
        merged.ids.withUnsafeBytes { ids in
            merged.contents.withUnsafeBytes { contents in
                #expect(ids.count == 4 * 7)
                // An id already in the run keeps its first content.
                #expect([1, 5, 7, 9].map { ReceivedIDRun.find($0, ids: ids, contents: contents) } == [10, 50, 70, 90])
                #expect(ReceivedIDRun.find(6, ids: ids, contents: contents) == nil)
                let key: [UInt8] = [0x69, 0, 0, 0, 1]
                key.withUnsafeBytes { key in
                    #expect(ReceivedIDRun.damage(key: key, ids: ids, contents: contents) == nil)
                    #expect(
                        ReceivedIDRun.damage(
                            key: key,
                            ids: UnsafeRawBufferPointer(rebasing: ids[0..<27]),
                            contents: contents
                        )
                            == "its ids are 27 bytes, not a positive multiple of 7"
                    )
                    #expect(
                        ReceivedIDRun.damage(
                            key: key,
                            ids: ids,
                            contents: UnsafeRawBufferPointer(rebasing: contents[0..<12])
                        )
                            == "it has 12 bytes of contents for 4 ids"
                    )
                }
            }
        }
        var reversed = merged.ids
        reversed.replaceSubrange(0..<7, with: merged.ids[21..<28])
        let key: [UInt8] = [0x69, 0, 0, 0, 1]
        reversed.withUnsafeBytes { ids in
            merged.contents.withUnsafeBytes { contents in
                key.withUnsafeBytes { key in
                    #expect(
                        ReceivedIDRun.damage(key: key, ids: ids, contents: contents)
                            == "its ids are not in ascending order"
                    )
                }
            }
        }
    }

    @Test func thePendingIDsAreFoundAndSortedByRun() {
        var pending = PendingReceivedIDs()
        let a = pending.number(of: Array("key-a".utf8))
        let b = pending.number(of: Array("key-b".utf8))
        for i in 0..<5_000 {
            pending.insert(
                tenant: a,
                id: ReceivedID(high: UInt64(i) &* 0x9E37_79B9, low: UInt32(i)),
                content: UInt32(i),
                now: 7
            )
        }
        pending.insert(tenant: a, id: ReceivedID(high: 0, low: 0), content: 99, now: 8)  // a copy: first content kept
        #expect(pending.since == 7)
        #expect(pending.content(tenant: a, id: ReceivedID(high: 4_999 &* 0x9E37_79B9, low: 4_999)) == 4_999)
        #expect(pending.content(tenant: a, id: ReceivedID(high: 0, low: 0)) == 0)
        #expect(pending.content(tenant: b, id: ReceivedID(high: 0, low: 0)) == nil)
        var sorted: [PendingReceivedIDs.Entry] = []
        pending.forEachRun { _, entries in sorted += entries }  // runs in key order, each ascending
        #expect(sorted.count == 5_000 && zip(sorted, sorted.dropFirst()).allSatisfy { $0.id < $1.id })
        pending.removeAll()
        #expect(pending.isEmpty && pending.since == nil)
        #expect(pending.content(tenant: a, id: ReceivedID(high: 0, low: 0)) == nil)
        // Accounts are numbered again after each fold.
        #expect(pending.knownNumber(of: Array("key-b".utf8)) == nil)
        let again = pending.number(of: Array("key-b".utf8))
        pending.insert(tenant: again, id: ReceivedID(high: 1, low: 2), content: 3, now: 9)
        #expect(pending.content(tenant: again, id: ReceivedID(high: 1, low: 2)) == 3)
    }
}
