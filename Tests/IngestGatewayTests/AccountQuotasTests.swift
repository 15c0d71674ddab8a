import Testing

@testable import IngestGateway

extension AccountQuotas {
    /// A batch as the server meets it: checked, then charged when admitted.
    fileprivate func admit(tenant: String, records: Int, bytes: Int, now: Double) -> Decision {
        let decision = check(tenant: tenant, now: now)
        if decision == .admit { charge(tenant: tenant, records: records, bytes: bytes) }
        return decision
    }
}

/// ``AccountQuotas``: token buckets per account, on a clock the test moves.
@Suite struct AccountQuotasTests {
    @Test func aBatchIsAdmittedUntilTheBucketIsInDebtThenTheRetryAfterPaysTheDebt() {
        let quotas = AccountQuotas(limits: .init(recordsPerSecond: 100, bytesPerSecond: nil, burstSeconds: 2))
        // 200 saved up: 150 fits, the next 150 is admitted into debt (-100)…
        #expect(quotas.admit(tenant: "a", records: 150, bytes: 0, now: 0) == .admit)
        #expect(quotas.admit(tenant: "a", records: 150, bytes: 0, now: 0) == .admit)
        // …which takes 1 s at 100/s to pay off: refused until then, logged once.
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 0, now: 0) == .wait(seconds: 1, log: true))
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 0, now: 0.5) == .wait(seconds: 1, log: false))
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 0, now: 1.0) == .admit)
        // Another account has its own bucket.
        #expect(quotas.admit(tenant: "b", records: 150, bytes: 0, now: 1.0) == .admit)
    }

    @Test func bytesAreLimitedAndTheLongerWaitWins() {
        let quotas = AccountQuotas(limits: .init(recordsPerSecond: 1000, bytesPerSecond: 1000, burstSeconds: 1))
        #expect(quotas.admit(tenant: "a", records: 10, bytes: 4000, now: 0) == .admit)
        // 3,000 bytes of debt at 1,000/s: 3 s, though the records are fine.
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 1, now: 0) == .wait(seconds: 3, log: true))
        // A minute later the refusal is worth a journal line again (999,000 - 51 s × 1,000 of debt).
        _ = quotas.admit(tenant: "a", records: 1_000_000, bytes: 1, now: 10)
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 1, now: 61) == .wait(seconds: 948, log: true))
    }

    @Test func savedQuotaIsCappedAtTheBurst() {
        let quotas = AccountQuotas(limits: .init(recordsPerSecond: 10, bytesPerSecond: nil, burstSeconds: 1))
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 0, now: 0) == .admit)
        // An hour idle saves 10, not 36,000: 10 more then 11 into debt.
        #expect(quotas.admit(tenant: "a", records: 21, bytes: 0, now: 3600) == .admit)
        #expect(quotas.admit(tenant: "a", records: 1, bytes: 0, now: 3600) == .wait(seconds: 2, log: true))
    }

    @Test func noLimitsAdmitEverything() {
        let quotas = AccountQuotas(limits: .init())
        for _ in 0..<3 { #expect(quotas.admit(tenant: "a", records: 1 << 40, bytes: 1 << 40, now: 0) == .admit) }
    }
}
