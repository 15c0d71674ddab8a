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
        /// Refuse: this address has its `maxPerAddress` connections open.
        case refuseAddress
        /// Refuse: every slot is trusted or busy.
        case refuseFull
    }

    var count: Int { slots.count }

    /// What to do with a new connection from `address`, in the event
    /// loop's round `round`, at `now` (default: long after every admission).
    func decide(address: String, round: UInt64 = 0, now: Int64 = .max) -> Decision {
        if perAddress[address, default: 0] >= maxPerAddress { return .refuseAddress }
        guard slots.count >= maxConnections else { return .admit }
        // Older than the grace first, then the quietest, then the first admitted.
        var victim: (fd: Int32, young: Int, at: Int64, order: UInt64)?
        for (fd, slot) in slots where !slot.trusted && !slot.busy && (slot.round < round || round == 0) {
            let young = now - slot.admittedAt < Self.graceMilliseconds ? 1 : 0
            if let v = victim, (v.young, v.at, v.order) <= (young, slot.lastActivityAt, slot.order) { continue }
            victim = (fd, young, slot.lastActivityAt, slot.order)
        }
        return victim.map { .admitAfterEvicting($0.fd) } ?? .refuseFull
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
