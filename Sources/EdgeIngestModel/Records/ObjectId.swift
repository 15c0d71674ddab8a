#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A 12-byte, MongoDB-compatible unique identifier: the primary key `_id` of
/// every record.
///
/// The layout is the one MongoDB and Realm use: a 4-byte big-endian count of
/// seconds since the Unix epoch, 5 random bytes chosen once per process, and a
/// 3-byte big-endian counter that starts at a random value. Its text form is
/// 24 lowercase hexadecimal characters.
///
/// ```swift
/// let id = ObjectId.generate()
/// let same = try ObjectId(string: id.hexString)
/// assert(id == same)
/// ```
///
/// Ids from ``generate()`` are unique and strictly increasing within a
/// process (the counter is bumped under a lock, and the timestamp never moves
/// backwards even if the wall clock does).
public struct ObjectId: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 12 bytes, in wire order.
    public let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    /// The zero id (`000000000000000000000000`), as Realm's `ObjectId()`.
    ///
    /// Record creation treats a zero `_id` as "none given" and generates one.
    public init() {
        bytes = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    }

    /// Creates an id from exactly 12 bytes, or returns nil.
    public init?<C: Collection>(bytes source: C) where C.Element == UInt8 {
        guard source.count == 12 else { return nil }
        var raw = ObjectId()
        withUnsafeMutableBytes(of: &raw) { out in
            for (i, byte) in source.enumerated() { out[i] = byte }
        }
        self = raw
    }

    package init(tuple: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        bytes = tuple
    }

    package init(unsafeBytes p: UnsafeRawBufferPointer) {
        bytes = (p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11])
    }

    /// Parses the 24-character hexadecimal text form (either case).
    ///
    /// - Throws: ``EdgeIngestError`` with code ``EdgeIngestError/Code/invalidObjectId``
    ///   saying what was wrong with the text.
    public init(string: String) throws {
        var text = string
        guard let id = text.withUTF8({ ObjectId(hexUTF8: UnsafeRawBufferPointer($0)) }) else {
            throw EdgeIngestError(
                .invalidObjectId,
                "An ObjectId must be 24 hexadecimal characters, got \(quoted(string))."
            )
        }
        self = id
    }

    /// Parses 24 hexadecimal ASCII bytes; nil if they are not exactly that.
    package init?(hexUTF8 p: UnsafeRawBufferPointer) {
        guard p.count == 24 else { return nil }
        var out: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        // Without a branch per digit: ids with nothing in common (random
        // ones) mix digits and letters, and mispredicted branches cost more
        // than the arithmetic (docs/BENCHMARKS.md, "Random ids at a gateway").
        let bad = withUnsafeMutableBytes(of: &out) { dst -> UInt8 in
            var bad: UInt8 = 0
            for i in 0..<12 {
                let hi = Self.nibble(p[2 * i], &bad)
                let lo = Self.nibble(p[2 * i + 1], &bad)
                dst[i] = hi << 4 | lo
            }
            return bad
        }
        guard bad == 0 else { return nil }
        bytes = out
    }

    /// One hexadecimal digit's value; `bad` gets a bit when `c` is none.
    @inline(__always)
    private static func nibble(_ c: UInt8, _ bad: inout UInt8) -> UInt8 {
        let digit = c &- UInt8(ascii: "0")
        let letter = (c | 0x20) &- UInt8(ascii: "a")  // either case
        let isDigit = digit < 10
        bad |= isDigit || letter < 6 ? 0 : 1
        return isDigit ? digit : letter &+ 10
    }

    /// Generates a new id, unique and monotonic within this process.
    public static func generate() -> ObjectId {
        ObjectIdGenerator.shared.next()
    }

    /// Whether 12 id bytes carry this process's 5 random bytes, i.e. were
    /// made by ``generate()`` here (by chance otherwise: 1 in 2⁴⁰ per
    /// other process): such an id cannot have been received from elsewhere.
    package static func isGeneratedByThisProcess(_ bytes: UnsafeRawBufferPointer) -> Bool {
        ObjectIdGenerator.shared.isOwn(bytes)
    }

    /// The seconds-since-epoch part of the id.
    public var timestampSeconds: UInt32 {
        withUnsafeBytes(of: bytes) { UInt32($0[0]) << 24 | UInt32($0[1]) << 16 | UInt32($0[2]) << 8 | UInt32($0[3]) }
    }

    /// The 3-byte counter (the last part of the id).
    public var counter: UInt32 {
        withUnsafeBytes(of: bytes) { UInt32($0[9]) << 16 | UInt32($0[10]) << 8 | UInt32($0[11]) }
    }

    /// True for the zero id.
    public var isZero: Bool { self == ObjectId() }

    /// The 24-character lowercase hexadecimal text form.
    public var hexString: String {
        String(unsafeUninitializedCapacity: 24) { buffer in
            writeHex(into: UnsafeMutableRawBufferPointer(buffer))
            return 24
        }
    }

    /// Writes the 24 hex characters into `out` (which must hold 24 bytes).
    func writeHex(into out: UnsafeMutableRawBufferPointer) {
        // Arithmetic, not a table: a global array is a lazy global, checked
        // on each of the 24 reads (issue 22's profile).
        @inline(__always) func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? nibble &+ 48 : nibble &+ 87 }
        withUnsafeBytes(of: bytes) { raw in
            for i in 0..<12 {
                out[2 * i] = digit(raw[i] >> 4)
                out[2 * i + 1] = digit(raw[i] & 0xF)
            }
        }
    }

    /// Appends the 12 raw bytes to `array`.
    package func appendBytes(to array: inout [UInt8]) {
        withUnsafeBytes(of: bytes) { array.append(contentsOf: $0) }
    }

    public var description: String { hexString }

    public static func == (a: ObjectId, b: ObjectId) -> Bool {
        withUnsafeBytes(of: a.bytes) { pa in withUnsafeBytes(of: b.bytes) { pb in pa.elementsEqual(pb) } }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: bytes) { hasher.combine(bytes: $0) }
    }

    /// Byte-wise order, which for generated ids is creation order.
    public static func < (a: ObjectId, b: ObjectId) -> Bool {
        withUnsafeBytes(of: a.bytes) { pa in
            withUnsafeBytes(of: b.bytes) { pb in pa.lexicographicallyPrecedes(pb) }
        }
    }
}

/// Process-wide state for ``ObjectId/generate()``.
final class ObjectIdGenerator: Sendable {
    static let shared = ObjectIdGenerator()

    private struct State {
        var lastSeconds: UInt32
        var counter: UInt32
    }

    private let processUnique: (UInt8, UInt8, UInt8, UInt8, UInt8)
    private let state: PlainMutex<State>

    private init() {
        var rng = SystemRandomNumberGenerator()
        processUnique = (
            UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 0...255, using: &rng),
            UInt8.random(in: 0...255, using: &rng), UInt8.random(in: 0...255, using: &rng),
            UInt8.random(in: 0...255, using: &rng)
        )
        state = PlainMutex(State(lastSeconds: 0, counter: UInt32.random(in: 0..<0x00FF_FFFF, using: &rng)))
    }

    func isOwn(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let p = processUnique
        return bytes.count == 12 && bytes[4] == p.0 && bytes[5] == p.1 && bytes[6] == p.2 && bytes[7] == p.3
            && bytes[8] == p.4
    }

    func next() -> ObjectId {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)  // seconds are all an id keeps; the coarse clock costs less
        let wallSeconds = UInt32(truncatingIfNeeded: now.tv_sec)
        let (seconds, counter) = state.withLock { s -> (UInt32, UInt32) in
            // Never go backwards: a wall-clock step back keeps the last second.
            if wallSeconds > s.lastSeconds { s.lastSeconds = wallSeconds }
            s.counter = (s.counter &+ 1) & 0x00FF_FFFF
            if s.counter == 0 {
                // The 24-bit counter wrapped within one second: borrow the next
                // second so ids stay unique and increasing.
                s.lastSeconds &+= 1
            }
            return (s.lastSeconds, s.counter)
        }
        let p = processUnique
        // In place: an array per id was a heap allocation per reading.
        return ObjectId(
            tuple: (
                UInt8(seconds >> 24), UInt8(truncatingIfNeeded: seconds >> 16),
                UInt8(truncatingIfNeeded: seconds >> 8), UInt8(truncatingIfNeeded: seconds),
                p.0, p.1, p.2, p.3, p.4,
                UInt8(truncatingIfNeeded: counter >> 16), UInt8(truncatingIfNeeded: counter >> 8),
                UInt8(truncatingIfNeeded: counter)
            )
        )
    }
}
