/// The positions of streams that resume where their last commit left them
/// (``SourcePosition``): one at a time, and the forgetting of old ones.
extension DurableQueue {
    /// The committed position of one source, or nil if it has none.
    public func position(of source: String) throws -> String? {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let stmt = try store.db.prepare("SELECT position FROM positions WHERE source = ?1")
            stmt.bind(1, source)
            return try stmt.step() ? stmt.string(0) : nil
        }
    }

    /// Sets one source's position in a transaction of its own (for marks
    /// that go with no readings: an export's id, an import done).
    public func setPosition(source: String, position: String) throws {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            try store.db.transaction {
                try store.set(position: SourcePosition(source: source, position: position), at: wallClockMilliseconds())
            }
        }
    }

    /// Deletes the positions of sources whose names start with `prefix` and
    /// that were last committed before `updatedBefore` (ms since the
    /// epoch), in one transaction; returns how many. For sources that come
    /// and go (each `ingestd send` is one), so the table stays small.
    @discardableResult
    public func forgetPositions(prefix: String, updatedBefore: Int64) throws -> Int {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            return try store.db.transaction {
                // `source >= prefix AND source < prefix + U+10FFFF`: a range of the primary key.
                let stmt = try store.db.prepare(
                    "DELETE FROM positions WHERE source >= ?1 AND source < ?2 AND updated_at < ?3"
                )
                stmt.bind(1, prefix)
                stmt.bind(2, prefix + "\u{10FFFF}")
                stmt.bind(3, updatedBefore)
                try stmt.run()
                return store.db.changes
            }
        }
    }
}
