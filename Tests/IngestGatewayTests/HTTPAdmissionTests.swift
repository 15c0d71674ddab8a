import Testing

@testable import IngestGateway

/// ``HTTPAdmission``: slots, per-address counts, and which connection
/// makes room for a newcomer.
@Suite struct HTTPAdmissionTests {
    @Test func aFullServerEvictsTheLongestQuietUntrustedConnection() {
        var admission = HTTPAdmission(maxConnections: 3, maxPerAddress: 10)
        admission.admitted(10, address: "a", now: 100)
        admission.admitted(11, address: "b", now: 50)  // the quietest…
        admission.admitted(12, address: "c", now: 200)
        admission.update(11) { $0.trusted = true }  // …but it proved itself
        #expect(admission.decide(address: "d") == .admitAfterEvicting(10))
        admission.update(10) { $0.busy = true }  // a request under way is never cut
        #expect(admission.decide(address: "d") == .admitAfterEvicting(12))
        admission.update(12) { $0.trusted = true }
        #expect(admission.decide(address: "d") == .refuseFull)
        admission.closed(12)
        #expect(admission.decide(address: "d") == .admit)
    }

    @Test func amongEquallyQuietConnectionsTheFirstAdmittedGoesFirst() {
        var admission = HTTPAdmission(maxConnections: 3, maxPerAddress: 10)
        for fd: Int32 in [30, 20, 10] { admission.admitted(fd, address: "a", now: 7) }
        #expect(admission.decide(address: "b") == .admitAfterEvicting(30))
        admission.closed(30)
        admission.admitted(40, address: "b", now: 7)
        #expect(admission.decide(address: "c") == .admitAfterEvicting(20))
    }

    /// A connection accepted in the loop's current round has not been read
    /// yet: it cannot give way to another newcomer of the same round.
    @Test func aConnectionGetsOneRoundBeforeItCanBeEvicted() {
        var admission = HTTPAdmission(maxConnections: 2, maxPerAddress: 10)
        admission.admitted(1, address: "a", now: 0, round: 4)
        admission.admitted(2, address: "a", now: 0, round: 5)
        #expect(admission.decide(address: "b", round: 5) == .admitAfterEvicting(1))
        admission.closed(1)
        admission.admitted(3, address: "b", now: 0, round: 5)
        #expect(admission.decide(address: "c", round: 5) == .refuseFull)
        #expect(admission.decide(address: "c", round: 6) == .admitAfterEvicting(2))
    }

    /// A connection younger than the grace gives way only when no older one
    /// can, though it is the quietest.
    @Test func aYoungConnectionGoesAfterOlderOnes() {
        var admission = HTTPAdmission(maxConnections: 2, maxPerAddress: 10)
        admission.admitted(1, address: "a", now: 1_000)  // quiet since it came…
        admission.admitted(2, address: "a", now: 700)
        admission.update(2) { $0.lastActivityAt = 1_100 }  // …this one trickles
        #expect(admission.decide(address: "b", now: 1_100) == .admitAfterEvicting(2))
        #expect(admission.decide(address: "b", now: 1_000 + HTTPAdmission.graceMilliseconds) == .admitAfterEvicting(1))
    }

    @Test func oneAddressGetsAtMostItsShareAndClosingGivesItBack() {
        var admission = HTTPAdmission(maxConnections: 100, maxPerAddress: 2)
        admission.admitted(1, address: "10.0.0.1", now: 0)
        admission.admitted(2, address: "10.0.0.1", now: 0)
        admission.update(1) { $0.trusted = true }
        admission.update(2) { $0.busy = true }
        #expect(admission.decide(address: "10.0.0.1") == .refuseAddress)
        #expect(admission.decide(address: "10.0.0.2") == .admit)
        admission.closed(1)
        #expect(admission.decide(address: "10.0.0.1") == .admit)
        admission.closed(1)  // twice: no effect
        admission.closed(2)
        #expect(admission.count == 0)
    }

    /// Clients behind one NAT share its address with a flood of connections
    /// that never send credentials: the flood gives way within the address,
    /// and never another address's connection.
    @Test func aFullAddressMakesRoomFromItsOwnUntrustedConnections() {
        var admission = HTTPAdmission(maxConnections: 10, maxPerAddress: 3)
        admission.admitted(1, address: "nat", now: 100)
        admission.admitted(2, address: "nat", now: 50)  // the quietest of the address
        admission.admitted(3, address: "nat", now: 200)
        admission.admitted(4, address: "other", now: 0)  // quieter still, but another address
        #expect(admission.decide(address: "nat") == .admitAfterEvictingFromAddress(2))
        admission.update(2) { $0.trusted = true }  // a client behind the NAT proved itself
        #expect(admission.decide(address: "nat") == .admitAfterEvictingFromAddress(1))
        admission.update(1) { $0.busy = true }
        admission.update(3) { $0.trusted = true }
        #expect(admission.decide(address: "nat") == .refuseAddress)
        // A new untrusted one is spared for its grace: the next newcomer is
        // admitted over the share, and the new one goes once its grace is over.
        admission.closed(3)
        admission.admitted(5, address: "nat", now: 300, round: 9)
        #expect(admission.decide(address: "nat", round: 9, now: 310) == .admit)
        #expect(admission.decide(address: "nat", round: 10, now: 310) == .admit)
        #expect(
            admission.decide(address: "nat", round: 10, now: 300 + HTTPAdmission.graceMilliseconds)
                == .admitAfterEvictingFromAddress(5)
        )
    }

    @Test func theHostOfAPeerIsWithoutItsPort() {
        #expect(HTTPEventLoop.host(of: "127.0.0.1:5555") == "127.0.0.1")
        #expect(HTTPEventLoop.host(of: "[::1]:5555") == "[::1]")
    }
}
