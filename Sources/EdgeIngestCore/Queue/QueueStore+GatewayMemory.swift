/// The gateway's memory in the queue file (format 4): the received ids
/// (format 3's groups, the runs and the pending ids) and the client
/// sessions (``ReceivedIDs``). They hold no
/// readings, so damage there loses none; it loses what the gateway knows:
/// a batch received before may be stored again, a client restored from a
/// backup may not be told to reset. ``DurableQueue/verify()`` checks every
/// row's structure (they have no checksum: a group's members and contents
/// are checked against each other); ``DurableQueue/repair()`` deletes the
/// rows that fail and records when (`meta.received.forgotten_at`).
extension QueueStore {
    /// A damaged row of the gateway's memory: its table, its key (hex), the problem.
    struct GatewayMemoryDamage: Hashable {
        var table: String
        var key: [UInt8]
        var problem: String
    }

    /// Calls `body` with the number of rows checked and each damaged row.
    func scanGatewayMemory(_ body: (GatewayMemoryDamage?) throws -> Void) throws {
        for generation in 0..<2 {
            let table = "received_groups_\(generation)"
            let rows = try db.prepare("SELECT key, members, contents FROM \(table)")
            while try rows.step() {
                let key = rows.blob(0)
                let members = rows.blob(1)
                let contents = rows.isNull(2) ? nil : rows.blob(2)
                let problem = Self.groupDamage(key: key, members: members, contents: contents)
                try body(problem.map { GatewayMemoryDamage(table: table, key: Array(key), problem: $0) })
            }
        }
        for generation in 0..<2 {
            let table = "received_runs_\(generation)"
            let rows = try db.prepare("SELECT key, ids, contents FROM \(table)")
            while try rows.step() {
                let key = rows.blob(0)
                let problem = ReceivedIDRun.damage(key: key, ids: rows.blob(1), contents: rows.blob(2))
                try body(problem.map { GatewayMemoryDamage(table: table, key: Array(key), problem: $0) })
            }
        }
        let pending = try db.prepare("SELECT id, ids, contents FROM received_pending")
        while try pending.step() {
            let problem = ReceivedIDRun.pendingDamage(ids: pending.blob(1), contents: pending.blob(2))
            var rowID: [UInt8] = []
            withUnsafeBytes(of: pending.int64(0).bigEndian) { rowID.append(contentsOf: $0) }
            try body(problem.map { GatewayMemoryDamage(table: "received_pending", key: rowID, problem: $0) })
        }
        let sessions = try db.prepare(
            "SELECT CAST(nonce AS BLOB), typeof(nonce), epoch, seen_at FROM received_sessions"
        )
        while try sessions.step() {
            let nonce = sessions.blob(0)
            var problem: String?
            if sessions.string(1) != "text" || nonce.isEmpty {
                problem = "its client nonce is not text"
            } else if sessions.int64(2) < 0 || sessions.int64(3) < 0 {
                problem = "its epoch (\(sessions.int64(2))) or time (\(sessions.int64(3))) is negative"
            }
            try body(problem.map { GatewayMemoryDamage(table: "received_sessions", key: Array(nonce), problem: $0) })
        }
    }

    /// What is wrong with a group row, if anything: a key of an account's
    /// name and a 12-byte id, 1 to 128 members of 7 bits, the first the
    /// key's own, and 4 bytes of content per member (or none).
    static func groupDamage(
        key: UnsafeRawBufferPointer,
        members: UnsafeRawBufferPointer,
        contents: UnsafeRawBufferPointer?
    ) -> String? {
        guard key.count >= 12 else { return "its key is \(key.count) bytes, shorter than an _id" }
        guard (1...128).contains(members.count) else { return "it has \(members.count) members, not 1 to 128" }
        for member in members where member > ReceivedIDs.memberBits {
            return "a member (\(member)) is more than 7 bits"
        }
        guard members[0] == key[key.count - 1] & ReceivedIDs.memberBits else {
            return "its first member is not its key's"
        }
        if let contents, contents.count != members.count * 4 {
            return "it has \(contents.count) bytes of contents for \(members.count) members"
        }
        return nil
    }

    /// Deletes one damaged row of the gateway's memory.
    func forget(_ damage: GatewayMemoryDamage) throws {
        if damage.table == "received_pending" {
            let delete = try db.prepare("DELETE FROM received_pending WHERE id = ?1")
            delete.bind(1, damage.key.reduce(Int64(0)) { $0 << 8 | Int64($1) })
            return try delete.run()
        }
        let column = damage.table == "received_sessions" ? "CAST(nonce AS BLOB)" : "key"
        let delete = try db.prepare("DELETE FROM \(damage.table) WHERE \(column) = ?1")
        try damage.key.withUnsafeBytes { delete.bind(1, blob: $0) }
        try delete.run()
    }
}
