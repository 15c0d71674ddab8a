import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// An hour: no rotation of the received ids can happen during a test.
private let hour: Int64 = 3_600_000

private func receipt(
    window: Int64 = hour,
    session: (nonce: String, epoch: Int64)? = nil,
    tenant: String? = nil
) -> Receipt {
    Receipt(dedupWindowMilliseconds: window, session: session, tenant: tenant)
}

private func stored(_ accepted: Int, duplicates: Int = 0) -> ReceiveOutcome {
    .stored(AppendResult(accepted: accepted, droppedIncoming: 0, droppedStored: 0, duplicates: duplicates))
}

/// A WeatherSensor reading with the given 24-hex-digit `_id`.
private func reading(id: String, device: String) throws -> Record {
    try declaredWeatherSensor().validate(anyValues: [
        "_id": id, "deviceId": device, "temperatureInFahrenheit": 66.7,
        "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
    ])
}

private func hex(_ value: Int) -> String {
    let digits = String(value, radix: 16)
    return digits.count == 1 ? "0" + digits : digits
}

/// Sleeps long enough for the wall clock to move past a 1 ms window.
private func pastTinyWindow() { usleep(5_000) }

/// The CRC-32 of a record's encoded line, as received ids keep it.
private func lineChecksum(_ record: Record, _ queue: DurableQueue) throws -> Int64 {
    let batch = try EncodedBatch(records: [record], types: queue.typesByName, queueName: "test")
    return batch.runs[0].payload.withUnsafeBytes {
        SegmentChecksum.ofRecord(UnsafeRawBufferPointer(rebasing: $0[0..<batch.runs[0].ends[0]]))
    }
}

private func boundedConfiguration(_ dir: TemporaryDirectory, maxRecords: Int64?) throws -> QueueConfiguration {
    var configuration = try fileConfiguration(dir)
    configuration.maxRecords = maxRecords
    configuration.overflowPolicy = .block
    return configuration
}

/// Proves that `DurableQueue.receive` stores records received from another
/// client exactly once by `_id` (whole and partly repeated batches, across
/// reopening the file), forgets ids only after two rotations of the
/// two-generation window (so an id is kept at least one window), turns
/// deduplication off with a zero window, refuses a batch from an older
/// session epoch than one already seen, and answers `.queueFull` under the
/// block policy without storing or remembering anything.
@Suite struct ReceivedRecordsTests {
    // MARK: Deduplication

    @Test func aBatchReceivedTwiceIsStoredOnce() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(5)
        #expect(try queue.receive(records, receipt: receipt()) == stored(5))
        #expect(try queue.receive(records, receipt: receipt()) == stored(0, duplicates: 5))
        let stats = try queue.statistics()
        #expect(stats.queuedRecords == 5)
        #expect(stats.appendedTotal == 5)
        #expect(stats.counters["received.duplicates"] == 5)
        #expect(try drain(queue) == records.map(\.jsonString))
    }

    /// The connection's page cache grows to the received ids' budget once
    /// they are used (16 MiB by default; what the agent sets under a
    /// memory limit otherwise), and stays at the queue's own 256 KiB before.
    @Test(arguments: [nil, 3 << 20] as [Int?])
    func receivedIDsGetTheirPageCacheBudget(budget: Int?) throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        if let budget { configuration.settings.receivedIDsCacheBytes = budget }
        let queue = try DurableQueue.open(configuration)
        func cacheSize() throws -> Int64 {
            try queue.state.withLock { try $0.openStore("test").db.integer("PRAGMA cache_size") }
        }
        #expect(try cacheSize() == -256)
        #expect(try queue.receive(try weatherRecords(3), receipt: receipt()) == stored(3))
        #expect(try cacheSize() == -Int64((budget ?? 16 << 20) >> 10))
    }

    /// A batch of 100 consecutive ids is remembered in groups (a row per
    /// bucket of 128 ids) with each record's own content, and found again
    /// after reopening (no filter then: every bucket is looked up).
    @Test func aLargeBatchIsRememberedInGroupsWithItsContents() throws {
        let dir = try TemporaryDirectory()
        let type = try declaredWeatherSensor()
        let records = try weatherRecords(100)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive(records, receipt: receipt(tenant: "key-a")) == stored(100))
        }
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        var again = records
        for changed in [31, 32, 99] {
            again[changed] = try type.validate(anyValues: [
                "_id": records[changed].id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
                "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
            ])
        }
        guard case .stored(let result) = try queue.receive(again, receipt: receipt(tenant: "key-a")) else {
            Issue.record("not stored")
            return
        }
        #expect(result.accepted == 0 && result.duplicates == 97 && result.conflicts == [31, 32, 99])
        // Another account's ids are its own.
        #expect(try queue.receive(records, receipt: receipt(tenant: "key-b")) == stored(100))
        #expect(try drain(queue).count == 200)
    }

    /// Ids of one bucket that came in several batches (two record types
    /// of one edge box take turns at its counter), out of order, and
    /// across a bucket's edge are each remembered with their own content.
    @Test func idsSharingABucketAcrossBatchesAreEachRemembered() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        // Counters 0x7C...0x83: a bucket ends after 0x7F.
        let records = try (0x7C...0x83).map { try reading(id: "6900000000000000000000" + hex($0), device: "D\($0)") }
        let even = stride(from: 0, to: 8, by: 2).map { records[$0] }
        let odd = stride(from: 1, to: 8, by: 2).map { records[$0] }
        #expect(try queue.receive(even, receipt: receipt(tenant: "key-a")) == stored(4))
        #expect(try queue.receive(odd.reversed(), receipt: receipt(tenant: "key-a")) == stored(4))
        #expect(try queue.receive(records.reversed(), receipt: receipt(tenant: "key-a")) == stored(0, duplicates: 8))
        let changed = try reading(id: "690000000000000000000081", device: "ELSEWHERE")
        guard case .stored(let result) = try queue.receive([records[0], changed], receipt: receipt(tenant: "key-a"))
        else {
            Issue.record("not stored")
            return
        }
        #expect(result.accepted == 0 && result.duplicates == 1 && result.conflicts == [1])
        // Four groups: each batch's ids split at the bucket's edge.
        #expect(try sqlite3(dir.file("queue.sqlite"), "SELECT count(*) FROM received_groups_0") == "4")
        // Reopened (no filter: looked up in the table), the same.
        queue.close()
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try reopened.receive(odd, receipt: receipt(tenant: "key-a")) == stored(0, duplicates: 4))
        #expect(
            try reopened.receive(
                [try reading(id: "690000000000000000000084", device: "N")],
                receipt: receipt(tenant: "key-a")
            )
                == stored(1)
        )
    }

    /// Keys are the account's name then the id, so a key of account "ti"
    /// can sort inside a bucket of account "t" (its name's last byte is
    /// the id's first): it is not taken for one of that account's ids.
    @Test func accountsWhoseNamesPrefixEachOthersDoNotShareIDs() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        // "t" + 69 AA..33 05 and "ti" + AA..33 05 05: the second sorts
        // between the first's bucket bounds, with member 5 too.
        let ofT = try reading(id: "69aabbccddeeff0011223305", device: "T")
        let ofTI = try reading(id: "aabbccddeeff001122330505", device: "TI")
        #expect(try queue.receive([ofTI], receipt: receipt(tenant: "ti")) == stored(1))
        #expect(try queue.receive([ofT], receipt: receipt(tenant: "t")) == stored(1))
        queue.close()
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        let ofT2 = try reading(id: "69aabbccddeeff0011223306", device: "T")
        #expect(try reopened.receive([ofTI], receipt: receipt(tenant: "ti")) == stored(0, duplicates: 1))
        #expect(try reopened.receive([ofT2, ofT], receipt: receipt(tenant: "t")) == stored(1, duplicates: 1))
    }

    /// Batches received on several threads at once are committed in
    /// groups, each seeing the ids of those before it in the same
    /// transaction: eight threads sending overlapping batches store each
    /// id once, and count the rest as duplicates.
    @Test func batchesReceivedAtOnceStoreEachIDOnce() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(400)
        let totals = PlainMutex((accepted: 0, duplicates: 0))
        let group = DispatchGroup()
        for thread in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                // Each thread: 20 batches of 40, windows that overlap the other threads'.
                for round in 0..<20 {
                    let start = (thread * 37 + round * 17) % 360
                    do {
                        guard
                            case .stored(let result) = try queue.receive(
                                Array(records[start..<start + 40]),
                                receipt: receipt(tenant: "key-a")
                            )
                        else { return }
                        totals.withLock {
                            $0.accepted += result.accepted
                            $0.duplicates += result.duplicates
                        }
                    } catch {
                        Issue.record("receive failed: \(error)")
                    }
                }
            }.start()
        }
        group.wait()
        let stored = try drain(queue)
        let (accepted, duplicates) = totals.withLock { $0 }
        #expect(Set(stored).count == stored.count, "no reading stored twice")
        #expect(accepted == stored.count)
        #expect(accepted + duplicates == 8 * 20 * 40)
        #expect(try queue.statistics().counters["received.duplicates"] == Int64(duplicates))
    }

    /// The MQTT input's receipt: readings that came without `_id` got one
    /// generated here, which no sender can repeat; only ids from elsewhere
    /// are looked up and remembered.
    @Test func idsGeneratedHereAreLeftOutOfTheWindowWhenTheReceiptSaysSo() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        var skipping = receipt()
        skipping.skipsIDsGeneratedHere = true
        let generated = try weatherRecords(3)
        #expect(try queue.receive(generated, receipt: skipping) == stored(3))
        #expect(try queue.receive(generated, receipt: skipping) == stored(3), "not remembered, so stored again")
        let type = try declaredWeatherSensor()
        let foreign = try (1...3).map { i in
            try type.validate([
                "_id": .string("65000000000000000000000\(i)"), "deviceId": .string("F\(i)"),
                "temperatureInFahrenheit": .double(66.7), "barometricPressureInHg": 29.65, "windSpeedInMph": .int(1),
            ])
        }
        #expect(try queue.receive(foreign + generated, receipt: skipping) == stored(6))
        #expect(try queue.receive(foreign, receipt: skipping) == stored(0, duplicates: 3))
        // Without the flag (a gateway), every id is remembered.
        #expect(try queue.receive(generated, receipt: receipt()) == stored(3))
        #expect(try queue.receive(generated, receipt: receipt()) == stored(0, duplicates: 3))
    }

    @Test func aPartlyRepeatedBatchStoresOnlyTheNewIDs() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(8)
        #expect(try queue.receive(Array(records[0..<3]), receipt: receipt()) == stored(3))
        // Old and new interleaved: 1, 5, 2, 6, 7 → 5, 6, 7 are new.
        let mixed = [records[1], records[5], records[2], records[6], records[7]]
        #expect(try queue.receive(mixed, receipt: receipt()) == stored(3, duplicates: 2))
        #expect(try queue.receive(Array(records[3...]), receipt: receipt()) == stored(2, duplicates: 3))
        #expect(try drain(queue) == [0, 1, 2, 5, 6, 7, 3, 4].map { records[$0].jsonString })
        #expect(try queue.statistics().counters["received.duplicates"] == 5)
    }

    /// Ids are remembered when stored, not when read: a batch holding the
    /// same `_id` twice must store it once as well.
    @Test func anIDRepeatedWithinOneBatchIsStoredOnce() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(2)
        let outcome = try queue.receive([records[0], records[1], records[0]], receipt: receipt())
        #expect(outcome == stored(2, duplicates: 1))
        #expect(try drain(queue) == records.map(\.jsonString))
    }

    /// One `_id` with other content is a conflict, not a re-send: not
    /// stored, listed by its index in the batch, counted apart (and as
    /// the input's `duplicate_id` rejection), within a batch and across.
    @Test func anIDReceivedAgainWithOtherContentIsAConflict() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let type = try declaredWeatherSensor()
        let records = try weatherRecords(3)
        let other = try type.validate(anyValues: [
            "_id": records[1].id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        #expect(other.id == records[1].id && other.jsonString != records[1].jsonString)
        guard case .stored(let first) = try queue.receive([records[0], records[1]], receipt: receipt()) else {
            Issue.record("not stored")
            return
        }
        #expect(first.accepted == 2 && first.conflicts.isEmpty)
        // Across batches: index 1 is the conflict, index 0 a re-send.
        guard case .stored(let second) = try queue.receive([records[0], other, records[2]], receipt: receipt()) else {
            Issue.record("not stored")
            return
        }
        #expect(second.accepted == 1 && second.duplicates == 1 && second.conflicts == [1])
        // Within one batch, the first one seen wins.
        let fresh = try weatherRecords(1, start: 10)[0]
        let freshOther = try type.validate(anyValues: [
            "_id": fresh.id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        guard case .stored(let third) = try queue.receive([fresh, fresh, freshOther], receipt: receipt()) else {
            Issue.record("not stored")
            return
        }
        #expect(third.accepted == 1 && third.duplicates == 1 && third.conflicts == [2])
        let stats = try queue.statistics()
        #expect(stats.counters["received.conflicts"] == 2)
        #expect(stats.counters["rejected.duplicate_id"] == 2)
        #expect(stats.counters["received.duplicates"] == 2)
        #expect(try drain(queue) == [records[0], records[1], records[2], fresh].map(\.jsonString))
    }

    /// Files from before groups kept a row per id (`received_ids_0`/`_1`,
    /// keyed on the id then the account's name, the content CRC when
    /// kept): opening converts them, each in its generation, and drops
    /// them. Their ids are re-sends with the same content, conflicts with
    /// other content, and re-sends whatever the content when it was not
    /// kept (the oldest layout, ids only).
    @Test func rowsPerIDFromBeforeGroupsAreConvertedAndStillMatch() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(6)
        let path = dir.file("queue.sqlite")
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            func content(_ record: Record) throws -> Int64 {
                let batch = try EncodedBatch(records: [record], types: queue.typesByName, queueName: "test")
                return batch.runs[0].payload.withUnsafeBytes {
                    SegmentChecksum.ofRecord(UnsafeRawBufferPointer(rebasing: $0[0..<batch.runs[0].ends[0]]))
                }
            }
            // As an earlier version left them: ids 0 and 1 of account key-a in
            // generation 0, id 2 of key-a in generation 1, id 3 with no account
            // and content unknown (the layout before contents), in generation 1.
            func legacyKey(_ record: Record, tenant: String) -> String {
                "X'\(record.id.hexString)' || CAST('\(tenant)' AS BLOB)"
            }
            _ = try sqlite3(
                path,
                """
                CREATE TABLE received_ids_0(id BLOB PRIMARY KEY, content INTEGER) WITHOUT ROWID;
                CREATE TABLE received_ids_1(id BLOB PRIMARY KEY) WITHOUT ROWID;
                INSERT INTO received_ids_0 VALUES(\(legacyKey(records[0], tenant: "key-a")), \(try content(records[0])));
                INSERT INTO received_ids_0 VALUES(\(legacyKey(records[1], tenant: "key-a")), \(try content(records[1])));
                INSERT INTO received_ids_1 VALUES(\(legacyKey(records[2], tenant: "key-a")));
                INSERT INTO received_ids_1 VALUES(X'\(records[3].id.hexString)');
                """
            )
            queue.close()
        }
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        let other = try declaredWeatherSensor().validate(anyValues: [
            "_id": records[1].id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        let otherOf2 = try declaredWeatherSensor().validate(anyValues: [
            "_id": records[2].id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        guard
            case .stored(let result) = try reopened.receive(
                [records[0], other, otherOf2, records[4]],
                receipt: receipt(tenant: "key-a")
            )
        else {
            Issue.record("not stored")
            return
        }
        #expect(result.accepted == 1 && result.duplicates == 2 && result.conflicts == [1])
        // The bare id of unknown content: a re-send, for a sender without an account.
        #expect(try reopened.receive([records[3], records[5]], receipt: receipt()) == stored(1, duplicates: 1))
        // Another account's ids are its own.
        #expect(try reopened.receive([records[0]], receipt: receipt(tenant: "key-b")) == stored(1))
        #expect(try sqlite3(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'received_ids_%'") == "0")
        #expect(try drain(reopened) == [records[4], records[5], records[0]].map(\.jsonString))
    }

    @Test func aZeroWindowStoresRepeatsAgain() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(4)
        #expect(try queue.receive(records, receipt: receipt(window: 0)) == stored(4))
        #expect(try queue.receive(records, receipt: receipt(window: 0)) == stored(4))
        #expect(try queue.statistics().queuedRecords == 8)
        // Nothing was remembered while deduplication was off.
        #expect(try queue.receive(records, receipt: receipt()) == stored(4))
        #expect(try queue.statistics().queuedRecords == 12)
    }

    @Test func idsAreRememberedAcrossReopeningTheQueue() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(6)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive(Array(records[..<4]), receipt: receipt()) == stored(4))
            queue.close()
        }
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try reopened.receive(records, receipt: receipt()) == stored(2, duplicates: 4))
        #expect(try drain(reopened) == records.map(\.jsonString))
        // Uploaded and deleted from the queue, the ids are still remembered.
        #expect(try reopened.receive(records, receipt: receipt()) == stored(0, duplicates: 6))
        #expect(try reopened.statistics().counters["received.duplicates"] == 10)
    }

    // MARK: The window's rotation

    @Test func idsAreKeptWhileTheWindowLasts() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(4)
        #expect(try queue.receive([records[0]], receipt: receipt()) == stored(1))
        for i in 1..<4 {
            pastTinyWindow()
            #expect(try queue.receive([records[i]], receipt: receipt()) == stored(1))
        }
        #expect(try queue.receive(records, receipt: receipt()) == stored(0, duplicates: 4))
    }

    /// With a 1 ms window and a sleep before each receive, every receive
    /// after the first rotates the generations (after looking its ids up).
    /// An id's generation is emptied by the second rotation after the
    /// receive that stored it: it is still found after one rotation (kept
    /// at least one window) and is forgotten after two.
    @Test func anIDSurvivesOneRotationAndIsForgottenAfterTwo() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(2)
        let (a, b) = (records[0], records[1])
        let tiny = receipt(window: 1)
        #expect(try queue.receive([a], receipt: tiny) == stored(1))  // generation 0: a
        pastTinyWindow()
        #expect(try queue.receive([b], receipt: tiny) == stored(1))  // rotation 1 → generation 1: b
        pastTinyWindow()
        // a found; rotation 2 empties its generation
        #expect(try queue.receive([a], receipt: tiny) == stored(0, duplicates: 1))
        pastTinyWindow()
        // a forgotten, b found; rotation 3 empties b's
        #expect(try queue.receive([a, b], receipt: tiny) == stored(1, duplicates: 1))
        pastTinyWindow()
        // b forgotten, a (stored again) found
        #expect(try queue.receive([b, a], receipt: tiny) == stored(1, duplicates: 1))
        #expect(try drain(queue) == [a, b, a, b].map(\.jsonString))
    }

    /// When the current generation started is in the file from the first
    /// use: an agent restarted more often than the window still rotates,
    /// so the tables stay bounded and old ids are forgotten.
    @Test func restartsMoreFrequentThanTheWindowStillRotate() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(11)
        let window = receipt(window: 40)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive([records[0]], receipt: window) == stored(1))
            queue.close()
        }
        for i in 1...10 {  // ~150 ms: several windows, each life shorter than one
            usleep(15_000)
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive([records[i]], receipt: window) == stored(1))
            queue.close()
        }
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.receive([records[0]], receipt: window) == stored(1))  // forgotten after two rotations
    }

    /// The current generation and when it started are stored in the file:
    /// after reopening, the next rotation empties the older generation (a's),
    /// not the one filled last (b's).
    @Test func theRotationStateSurvivesReopening() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(3)
        let (a, b, c) = (records[0], records[1], records[2])
        let tiny = receipt(window: 1)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive([a], receipt: tiny) == stored(1))  // generation 0: a
            pastTinyWindow()
            #expect(try queue.receive([b], receipt: tiny) == stored(1))  // rotation 1 → generation 1: b
            queue.close()
        }
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        pastTinyWindow()
        #expect(try reopened.receive([c], receipt: tiny) == stored(1))  // rotation 2 empties generation 0 → c
        pastTinyWindow()
        #expect(try reopened.receive([b, a], receipt: tiny) == stored(1, duplicates: 1))
        #expect(try drain(reopened) == [a, b, c, a].map(\.jsonString))
    }

    // MARK: Tenants (issue 23)

    /// One account cannot pre-claim another's `_id`: the other's record is
    /// stored, not answered as a duplicate, and each account still has its
    /// own re-sends deduplicated.
    @Test func accountsDoNotShareReceivedIDs() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(2)
        let type = try declaredWeatherSensor()
        let claim = try type.validate(anyValues: [
            "_id": records[0].id, "deviceId": "ATTACKER", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        #expect(try queue.receive([claim], receipt: receipt(tenant: "key-mallory")) == stored(1))
        #expect(try queue.receive(records, receipt: receipt(tenant: "key-alice")) == stored(2))
        #expect(try queue.receive(records, receipt: receipt(tenant: "key-alice")) == stored(0, duplicates: 2))
        #expect(try queue.receive([claim], receipt: receipt(tenant: "key-mallory")) == stored(0, duplicates: 1))
        // Without accounts every sender shares one space, as before.
        #expect(try queue.receive([records[1]], receipt: receipt()) == stored(1))
        #expect(try queue.receive([records[1]], receipt: receipt()) == stored(0, duplicates: 1))
        #expect(try queue.statistics().counters["received.conflicts"] == nil)
        #expect(try drain(queue) == ([claim] + records + [records[1]]).map(\.jsonString))
    }

    /// A session nonce is the account's own: another account using it with
    /// a higher epoch does not make the first one's batches stale.
    @Test func accountsDoNotShareSessions() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(3)
        #expect(
            try queue.receive([records[0]], receipt: receipt(session: ("n1", 9), tenant: "key-mallory")) == stored(1)
        )
        #expect(try queue.receive([records[1]], receipt: receipt(session: ("n1", 1), tenant: "key-alice")) == stored(1))
        #expect(
            try queue.receive([records[2]], receipt: receipt(session: ("n1", 8), tenant: "key-mallory"))
                == .staleSession(seenEpoch: 9)
        )
    }

    /// Ids received before keys had a tenant are still matched, for two
    /// windows, as re-sends of the same content (a client re-sending
    /// across the upgrade is stored once); other content under such an id
    /// is taken as another account's record, not as a conflict.
    @Test func idsReceivedBeforeTenantKeysMatchOnlyAsReSends() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(2)
        let path = dir.file("queue.sqlite")
        do {
            // As a version without tenant keys left them: groups keyed on the bare id.
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            for record in records {
                let content = UInt32(truncatingIfNeeded: try lineChecksum(record, queue))
                let contentHex = withUnsafeBytes(of: content.littleEndian) {
                    $0.map { String(format: "%02x", $0) }.joined()
                }
                let member = UInt8(record.id.hexString.suffix(2), radix: 16)! & 0x7F
                _ = try sqlite3(
                    path,
                    "INSERT INTO received_groups_0 VALUES(X'\(record.id.hexString)', X'\(String(format: "%02x", member))', X'\(contentHex)')"
                )
            }
            queue.close()
        }
        _ = try sqlite3(path, "DELETE FROM meta WHERE key = 'received.tenant_keys_since'")
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        let other = try declaredWeatherSensor().validate(anyValues: [
            "_id": records[1].id, "deviceId": "ELSEWHERE", "temperatureInFahrenheit": 1.5,
            "barometricPressureInHg": 29.65, "windSpeedInMph": 1,
        ])
        #expect(
            try reopened.receive([records[0], other], receipt: receipt(tenant: "key-a")) == stored(1, duplicates: 1)
        )
        #expect(try reopened.statistics().counters["received.conflicts"] == nil)
        // Past two windows the bare rows are no longer looked at.
        pastTinyWindow()
        #expect(try reopened.receive([records[1]], receipt: receipt(window: 1, tenant: "key-b")) == stored(1))
        // A file that never had bare rows never looks for them.
        let fresh = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(fresh))
        #expect(try queue.receive([records[0]], receipt: receipt(tenant: "key-a")) == stored(1))
        #expect(
            try sqlite3(fresh.file("queue.sqlite"), "SELECT value FROM meta WHERE key = 'received.tenant_keys_since'")
                == "0"
        )
    }

    // MARK: Sessions

    @Test func anOlderSessionEpochIsRefusedAndStoresNothing() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(6)
        #expect(try queue.receive(Array(records[0..<2]), receipt: receipt(session: ("client-a", 2))) == stored(2))
        let stale = try queue.receive(
            Array(records[2..<4]),
            receipt: receipt(session: ("client-a", 1)),
            counters: ["rejected.missing_id": 3]
        )
        #expect(stale == .staleSession(seenEpoch: 2))
        let stats = try queue.statistics()
        #expect(stats.queuedRecords == 2)
        #expect(stats.appendedTotal == 2)
        #expect(stats.counters["rejected.missing_id"] == nil)
        // The refused records' ids were not remembered either.
        #expect(try queue.receive(Array(records[2..<4]), receipt: receipt(session: ("client-a", 2))) == stored(2))
        #expect(try drain(queue) == records[0..<4].map(\.jsonString))
    }

    @Test func aNewerEpochIsAcceptedAndBecomesTheOneToBeat() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(5)
        #expect(try queue.receive([records[0]], receipt: receipt(session: ("client-a", 1))) == stored(1))
        // the same epoch
        #expect(try queue.receive([records[1]], receipt: receipt(session: ("client-a", 1))) == stored(1))
        #expect(try queue.receive([records[2]], receipt: receipt(session: ("client-a", 3))) == stored(1))
        #expect(
            try queue.receive([records[3]], receipt: receipt(session: ("client-a", 2))) == .staleSession(seenEpoch: 3)
        )
        // Another client's sessions are its own.
        #expect(try queue.receive([records[3]], receipt: receipt(session: ("client-b", 1))) == stored(1))
        // A batch without a session is not checked.
        #expect(try queue.receive([records[4]], receipt: receipt()) == stored(1))
        #expect(try queue.statistics().queuedRecords == 5)
    }

    @Test func seenEpochsSurviveReopeningAndApplyWithoutDeduplication() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(2)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            #expect(try queue.receive([records[0]], receipt: receipt(window: 0, session: ("client-a", 7))) == stored(1))
            queue.close()
        }
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        #expect(
            try reopened.receive([records[1]], receipt: receipt(window: 0, session: ("client-a", 6)))
                == .staleSession(seenEpoch: 7)
        )
        #expect(try reopened.statistics().queuedRecords == 1)
    }

    // MARK: A full queue

    @Test func aFullQueueUnderBlockAnswersQueueFullAndStoresNothing() throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(4)
        do {
            let queue = try DurableQueue.open(try boundedConfiguration(dir, maxRecords: 3))
            #expect(try queue.receive(Array(records[..<3]), receipt: receipt(session: ("client-a", 1))) == stored(3))
            let full = try queue.receive(
                [records[3]],
                receipt: receipt(session: ("client-a", 5)),
                counters: ["rejected.empty_record": 1]
            )
            #expect(full == .queueFull)
            let stats = try queue.statistics()
            #expect(stats.queuedRecords == 3)
            #expect(stats.appendedTotal == 3)
            #expect(stats.counters["rejected.empty_record"] == nil)
            // A re-send of what is already stored needs no space: it is answered, not refused.
            #expect(
                try queue.receive(Array(records[..<3]), receipt: receipt(session: ("client-a", 1)))
                    == stored(0, duplicates: 3)
            )
            queue.close()
        }
        // Neither the refused record's id nor its session's epoch was remembered.
        let unbounded = try DurableQueue.open(try boundedConfiguration(dir, maxRecords: nil))
        #expect(try unbounded.receive([records[3]], receipt: receipt(session: ("client-a", 2))) == stored(1))
        #expect(try drain(unbounded) == records.map(\.jsonString))
    }

    @Test func aBatchThatCanNeverFitThrowsQueueFull() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try boundedConfiguration(dir, maxRecords: 3))
        #expect {
            _ = try queue.receive(try weatherRecords(4), receipt: receipt())
        } throws: { error in
            (error as? EdgeIngestError)?.code == .queueFull
        }
        #expect(try queue.statistics().queuedRecords == 0)
    }
}
