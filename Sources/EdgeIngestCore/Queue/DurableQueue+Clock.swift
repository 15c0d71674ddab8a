extension DurableQueue {
    /// Records, the first time the wall clock is seen synchronised in this
    /// boot, its offset from the boot-time clock (`boots.offset_ms`): from
    /// then on, records accepted earlier in this boot leave with a
    /// corrected acceptance time (``AcceptanceStamping``) and held ones
    /// are released. Appends do this too; the agent calls it when its
    /// clock watch sees the clock become synchronised, so that an idle
    /// queue learns the offset as well.
    package func recordClockOffsetIfSynchronised() throws {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            try store.recordClockOffsetIfSynchronised(now: wallClockMilliseconds())
        }
    }
}
