import Testing

@testable import IngestGateway

/// The gateway's login throttle, on a clock the test sets: free failures,
/// then delays doubling to the cap, per account and per address; an
/// account that does not exist is throttled like one that does; a success
/// clears the account only; old failures are forgotten.
@Suite struct LoginThrottleTests {
    @Test func afterFiveFailuresAnAccountWaitsLongerEachTime() {
        let throttle = LoginThrottle()
        var now: Int64 = 1_000
        for _ in 0..<LoginThrottle.freeFailures {
            #expect(throttle.delay(account: "ops@example.com", address: "10.0.0.1", now: now) == nil)
            throttle.failed(account: "ops@example.com", address: "10.0.0.1", now: now)
            now += 1
        }
        let last = now - 1
        // 1 s after the fifth failure; any other spelling of the email is the same account.
        #expect(throttle.delay(account: "OPS@example.com", address: "10.0.0.2", now: last) == 1)
        #expect(throttle.delay(account: "ops@example.com", address: "10.0.0.2", now: last + 1) == nil)
        var expected: Int64 = 2
        for _ in 0..<12 {
            throttle.failed(account: "ops@example.com", address: "10.0.0.2", now: now)
            #expect(throttle.delay(account: "ops@example.com", address: "10.0.0.3", now: now) == expected)
            now += expected
            expected = min(expected * 2, LoginThrottle.maxDelaySeconds)
        }
        #expect(expected == LoginThrottle.maxDelaySeconds)
        // Other accounts from other addresses are not slowed.
        #expect(throttle.delay(account: "dev@example.com", address: "10.0.0.9", now: now) == nil)
        // A success clears the account; failures long past are forgotten.
        throttle.succeeded(account: "Ops@example.com")
        #expect(throttle.delay(account: "ops@example.com", address: "10.0.0.9", now: now) == nil)
        throttle.failed(account: "dev@example.com", address: "10.0.0.9", now: now)
        #expect(
            throttle.delay(account: "dev@example.com", address: "10.0.0.9", now: now + LoginThrottle.forgetAfterSeconds)
                == nil
        )
    }

    @Test func anAddressGuessingManyAccountsWaitsForAll() {
        let throttle = LoginThrottle()
        for i in 0..<LoginThrottle.freeFailuresPerAddress {
            #expect(throttle.delay(account: "user\(i)@example.com", address: "192.0.2.7", now: 50) == nil)
            throttle.failed(account: "user\(i)@example.com", address: "192.0.2.7", now: 50)
        }
        // Now every login from there waits, also for an account it never tried and for API keys (no account).
        #expect(throttle.delay(account: "new@example.com", address: "192.0.2.7", now: 50) == 1)
        #expect(throttle.delay(account: nil, address: "192.0.2.7", now: 50) == 1)
        #expect(throttle.delay(account: "new@example.com", address: "192.0.2.8", now: 50) == nil)
        // A success does not unlock the address.
        throttle.succeeded(account: "user1@example.com")
        #expect(throttle.delay(account: nil, address: "192.0.2.7", now: 50) == 1)
    }

    /// Each failure may add two keys (an account and an address): the table
    /// still never holds more than its bound, and the newest stay.
    @Test func theTableStaysWithinItsBound() {
        let throttle = LoginThrottle(maxEntries: 100)
        for i in 0..<1_000 {
            throttle.failed(account: "user\(i)@example.com", address: "198.51.100.\(i % 250)", now: Int64(i))
            #expect(throttle.count <= 100)
        }
        for _ in 0..<LoginThrottle.freeFailures - 1 {
            throttle.failed(account: "user999@example.com", address: "203.0.113.1", now: 999)
        }
        #expect(throttle.delay(account: "user999@example.com", address: "203.0.113.2", now: 999) == 1)
    }

    @Test func thePeersAddressIsTakenWithoutItsPort() {
        #expect(LoginThrottle.address(ofPeer: "127.0.0.1:53412") == "127.0.0.1")
        #expect(LoginThrottle.address(ofPeer: "[::1]:8080") == "::1")
        #expect(LoginThrottle.address(ofPeer: "?") == "?")
    }
}
