/// Where a queue's records go: one or several named sinks, each taking
/// every record type or some of them. A record is stored once and deleted
/// when every sink it is routed to is done with it (confirmed, dead-lettered
/// for that sink, or dropped behind for it); each sink takes and
/// acknowledges at its own cursor (docs/QUEUE.md "Several sinks").
///
/// ```swift
/// var configuration = QueueConfiguration(location: .file(path: path), objectTypes: types)
/// configuration.routing = QueueRouting(sinks: [
///     .init(name: QueueRouting.defaultSinkName),                 // every type
///     .init(name: "archive", types: ["Alarm"], maxLagBytes: 64 << 20),
/// ])
/// let queue = try DurableQueue.open(configuration)
/// let lease = try queue.take(maxRecords: 1000, sink: "archive")
/// ```
public struct QueueRouting: Sendable, Hashable {
    /// One destination.
    public struct Sink: Sendable, Hashable {
        /// Its name: stable across restarts (its cursor is kept under it).
        public var name: String
        /// The record types routed to it; nil: every type.
        public var types: Set<String>?
        /// How many bytes of readings this sink alone may keep queued
        /// before its oldest are dropped behind for it (counted as
        /// `sink_lagged`); nil: no bound but the queue's own.
        public var maxLagBytes: Int64?
        /// How old (ms) the oldest reading waiting for this sink may get
        /// before it is dropped behind for it; nil: no bound.
        public var maxLagMilliseconds: Int64?

        public init(
            name: String,
            types: Set<String>? = nil,
            maxLagBytes: Int64? = nil,
            maxLagMilliseconds: Int64? = nil
        ) {
            self.name = name
            self.types = types
            self.maxLagBytes = maxLagBytes
            self.maxLagMilliseconds = maxLagMilliseconds
        }

        func takes(_ type: String) -> Bool { types?.contains(type) ?? true }
    }

    /// The sink every queue has unless told otherwise (the agent's one
    /// `[upload]`, a realm's backend). It is sink 0 in the file: a segment
    /// routed to it alone stores no routing at all.
    public static let defaultSinkName = "upload"

    /// The most sinks a queue can route to (a bit each in a 62-bit mask;
    /// the 63rd is ``SinkTable/storedFlag``).
    public static let maxSinks = 62

    /// The sinks, in the order they were configured.
    public var sinks: [Sink]

    public init(sinks: [Sink]) { self.sinks = sinks }

    /// One sink, ``defaultSinkName``, taking every type: the queue's
    /// behaviour before several sinks existed.
    public static let single = QueueRouting(sinks: [Sink(name: defaultSinkName)])

    /// Whether this is ``single`` (then no per-sink bookkeeping is done at all).
    var isSingle: Bool { sinks.count == 1 && sinks[0].name == Self.defaultSinkName && sinks[0].types == nil }

    func validated(types: [RecordType]) throws -> QueueRouting {
        guard !sinks.isEmpty else {
            throw EdgeIngestError(.invalidConfiguration, "A queue's routing names no sink: give it at least one.")
        }
        guard sinks.count <= Self.maxSinks else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "A queue routes to at most \(Self.maxSinks) sinks; this one names \(sinks.count)."
            )
        }
        var names = Set<String>()
        for sink in sinks {
            guard !sink.name.isEmpty, names.insert(sink.name).inserted else {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "Sink names must be unique and not empty; '\(sink.name)' is not."
                )
            }
        }
        for type in types where !sinks.contains(where: { $0.takes(type.name) }) {
            throw EdgeIngestError(
                .invalidConfiguration,
                "Record type '\(type.name)' is routed to no sink: its readings would never leave the queue. Add it to a sink's types, or let a sink take every type."
            )
        }
        return self
    }
}

/// A queue's sinks as the file knows them: each configured sink's id (a bit
/// in `segments.sinks`), and each type's mask.
struct SinkTable: Sendable {
    /// Configured sinks by id, with their settings.
    var byID: [Int: QueueRouting.Sink] = [:]
    /// Ids by name.
    var ids: [String: Int] = [:]
    /// Per type: the sinks it is routed to (a bit per id).
    var masks: [String: Int64] = [:]
    /// Whether this is one sink, the default, taking every type.
    var isSingle = true
    /// Per sink id: the first segment id written after it was added (0:
    /// it had every segment), so that a segment one removed sink alone
    /// still owed goes only to sinks that never had it.
    var fromSegment: [Int: Int64] = [:]
    /// Whether the file has ever been opened with several sinks (its
    /// dead letters are then counted per sink, and a replay is a new arrival).
    var everSeveral = false

    /// `segments.sinks` for a new segment of `type`: nil (no routing
    /// stored) when it goes to sink 0 alone.
    func storedMask(for type: String) -> Int64? {
        guard !isSingle, let mask = masks[type] else { return nil }
        return Self.stored(mask)
    }

    /// Set in every mask stored in `segments.sinks`, so that each takes 8
    /// bytes whatever sinks it holds: a sink's bit cleared then keeps the
    /// row's size, and SQLite overwrites the one page that changed in
    /// place instead of writing the row — its whole payload — again
    /// (measured: docs/BENCHMARKS.md "Several sinks").
    static let storedFlag = Int64(1) << 62

    /// `segments.sinks` for `mask`: nil for sink 0 alone (such a segment
    /// only ever leaves whole), else the mask with ``storedFlag``.
    static func stored(_ mask: Int64) -> Int64? { mask == 1 ? nil : mask | storedFlag }

    /// The mask a stored `segments.sinks` stands for.
    static func mask(stored: Int64?) -> Int64 { (stored ?? 1) & ~storedFlag }

    static func bit(_ id: Int) -> Int64 { Int64(1) << Int64(id) }

    /// The ids in `mask`, ascending.
    static func ids(in mask: Int64) -> [Int] { (0..<QueueRouting.maxSinks).filter { mask & bit($0) != 0 } }
}
