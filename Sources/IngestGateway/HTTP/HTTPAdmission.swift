/// Who gets a connection slot (issue 23): at most `maxConnections` open,
/// at most `maxPerAddress` from one address, and capacity that idle or
/// slow connections of clients that never proved themselves cannot take
/// from those that did.
///
/// A connection is **trusted** once the handler said one of its requests
/// carried valid credentials (``HTTPServerResponse/trustsClient``). When
/// every slot is taken, a new connection does not get 503 while an
/// untrusted one sits waiting: the untrusted connection that has been
/// quiet the longest (not one whose request a worker is answering) is
/// closed to make room. So a slowloris of thousands of connections only
/// cycles its own slots, and a client that connects and sends its
/// request at once is answered: it is the newest, so the last evicted.
/// Only when every open connection is trusted, busy, or was accepted in the
/// event loop's current round is the newcomer refused (503, Retry-After: 1):
/// a connection gets one round — the loop reads before it accepts — before
/// it can be made to give way, so a burst of newcomers cannot push out a
/// client whose request has arrived but was not read yet. And connections
/// younger than ``graceMilliseconds`` go only when no older one can: a
/// client slowed between its connect and its request (a loaded box) is
/// not the first to give way to a slowloris whose connections are older.
///
/// The per-address share works the same way within the address: clients
/// behind one NAT share it with whatever else comes from there, so when
/// an address has its `maxPerAddress` open, its own longest-quiet
/// untrusted connection past the grace gives way to the newcomer; while
/// its untrusted ones are all still in their grace the newcomer is
/// admitted over the share (the server's own limit still applies); only
/// when all of them are trusted or busy is it refused (503). A flood of
/// connections that never send valid credentials from a shared address
/// then cycles its own slots, and a client there that sends its
/// credentials at once is answered: it is never the one to give way for
/// the share while it is new.
///
/// Pure bookkeeping, used by the event loop's thread only.
struct HTTPAdmission {
    let maxConnections: Int
    let maxPerAddress: Int

    struct Slot {
        var address: String
        var trusted = false
        var busy = false
        var lastActivityAt: Int64
        /// Admission order: among equally quiet connections, the older goes first.
        var order: UInt64 = 0
        /// The event loop's round it was accepted in.
        var round: UInt64 = 0
        /// When it was accepted (monotonic ms).
        var admittedAt: Int64 = 0
    }

    /// How long a new connection is spared while older ones can give way.
    static let graceMilliseconds: Int64 = 250

    private(set) var slots: [Int32: Slot] = [:]
    private var admissions: UInt64 = 0
    private var perAddress: [String: Int] = [:]

    init(maxConnections: Int, maxPerAddress: Int) {
        self.maxConnections = max(1, maxConnections)
        self.maxPerAddress = max(1, maxPerAddress)
    }

    enum Decision: Equatable {
        case admit
        /// Admit after closing this connection (the longest-quiet untrusted one).
        case admitAfterEvicting(Int32)
        /// Admit after closing this connection from the same address (its
        /// longest-quiet untrusted one): the address was at its share.
        case admitAfterEvictingFromAddress(Int32)
        /// Refuse: this address has its `maxPerAddress` connections open,
        /// every one trusted, busy or accepted this round.
        case refuseAddress
        /// Refuse: every slot is trusted or busy.
        case refuseFull
    }

    var count: Int { slots.count }

    /// What to do with a new connection from `address`, in the event
    /// loop's round `round`, at `now` (default: long after every admission).
    func decide(address: String, round: UInt64 = 0, now: Int64 = .max) -> Decision {
        if perAddress[address, default: 0] >= maxPerAddress {
            // Closing one of the address's own frees a slot overall too. Only
            // one past its grace goes: a client that connected just now has
            // had no time to send its credentials.
            let own = { (slot: Slot) in slot.address == address }
            let pastGrace = { (slot: Slot) in own(slot) && now - slot.admittedAt >= Self.graceMilliseconds }
            if let fd = victim(round: round, now: now, pastGrace) { return .admitAfterEvictingFromAddress(fd) }
            // Untrusted ones still in their grace: admit over the share for
            // now; they give way once it is over (or to the server's limit).
            guard slots.values.contains(where: { own($0) && !$0.trusted && !$0.busy }) else { return .refuseAddress }
        }
        guard slots.count >= maxConnections else { return .admit }
        return victim(round: round, now: now) { _ in true }.map { .admitAfterEvicting($0) } ?? .refuseFull
    }

    /// The connection that gives way among those `eligible` says: untrusted,
    /// not busy, not accepted this round; older than the grace first, then
    /// the quietest, then the first admitted.
    private func victim(round: UInt64, now: Int64, _ eligible: (Slot) -> Bool) -> Int32? {
        var victim: (fd: Int32, young: Int, at: Int64, order: UInt64)?
        for (fd, slot) in slots
        where !slot.trusted && !slot.busy && (slot.round < round || round == 0) && eligible(slot) {
            let young = now - slot.admittedAt < Self.graceMilliseconds ? 1 : 0
            if let v = victim, (v.young, v.at, v.order) <= (young, slot.lastActivityAt, slot.order) { continue }
            victim = (fd, young, slot.lastActivityAt, slot.order)
        }
        return victim?.fd
    }

    mutating func admitted(_ fd: Int32, address: String, now: Int64, round: UInt64 = 0) {
        admissions += 1
        slots[fd] = Slot(address: address, lastActivityAt: now, order: admissions, round: round, admittedAt: now)
        perAddress[address, default: 0] += 1
    }

    mutating func closed(_ fd: Int32) {
        guard let slot = slots.removeValue(forKey: fd) else { return }
        let left = perAddress[slot.address, default: 1] - 1
        perAddress[slot.address] = left > 0 ? left : nil
    }

    mutating func update(_ fd: Int32, _ body: (inout Slot) -> Void) {
        guard var slot = slots[fd] else { return }
        body(&slot)
        slots[fd] = slot
    }
}
