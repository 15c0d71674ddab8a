import Foundation
import Testing

@testable import EdgeIngestCore

/// Starts `count` threads running `body(i)` and waits for all of them.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread {
            body(i)
            group.leave()
        }.start()
    }
    group.wait()
}

private struct Refused: Error, Equatable {
    let request: Int
}

/// Proves that ``CommitGroups`` gives each thread its own outcome (a value
/// or an error), commits one group at a time, and gathers the requests that arrive while a group commits into the
/// next one.
@Suite struct CommitGroupsTests {
    final class Log: @unchecked Sendable {
        let lock = NSLock()
        var groups: [[Int]] = []
        var inCommit = 0
        var overlapped = false
    }

    @Test func eachThreadGetsItsOwnOutcomeAndWaitingRequestsShareACommit() {
        let groups = CommitGroups<Int, Int>(maxGroup: 16)
        let log = Log()
        let outcomes = PlainMutex([Int: Result<Int, Refused>]())
        onThreads(12) { i in
            // The first commits alone and slowly; the others gather meanwhile.
            if i > 0 { usleep(20_000) }
            let outcome: Result<Int, Refused>
            do {
                outcome = .success(
                    try groups.run(i) { requests in
                        log.lock.withLock {
                            log.inCommit += 1
                            if log.inCommit > 1 { log.overlapped = true }
                            log.groups.append(requests)
                        }
                        if requests == [0] { usleep(300_000) }
                        log.lock.withLock { log.inCommit -= 1 }
                        return requests.map { $0 % 5 == 4 ? .failure(Refused(request: $0)) : .success($0 * 10) }
                    }
                )
            } catch let refused as Refused {
                outcome = .failure(refused)
            } catch {
                Issue.record("unexpected \(error)")
                return
            }
            outcomes.withLock { $0[i] = outcome }
        }
        let all = outcomes.withLock { $0 }
        for i in 0..<12 {
            #expect(all[i] == (i % 5 == 4 ? .failure(Refused(request: i)) : .success(i * 10)))
        }
        #expect(!log.overlapped, "one group at a time")
        #expect(log.groups.first == [0])
        #expect(log.groups.flatMap { $0 }.sorted() == Array(0..<12), "each request committed once")
        #expect(log.groups.contains { $0.count > 1 }, "requests that came during a commit share the next")
    }

    @Test func groupsAreCappedAtMaxGroup() {
        let groups = CommitGroups<Int, Int>(maxGroup: 3)
        let log = Log()
        onThreads(10) { i in
            if i > 0 { usleep(20_000) }
            _ = try? groups.run(i) { requests in
                log.lock.withLock { log.groups.append(requests) }
                if requests == [0] { usleep(300_000) }
                return requests.map { .success($0) }
            }
        }
        #expect(log.groups.allSatisfy { $0.count <= 3 })
        #expect(log.groups.flatMap { $0 }.sorted() == Array(0..<10))
    }
}
