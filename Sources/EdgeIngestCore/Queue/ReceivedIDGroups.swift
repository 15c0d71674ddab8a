/// A received 12-byte `_id` as two big-endian integers: ordered as its
/// bytes are, and split into the bucket ``ReceivedIDs`` groups it by (all
/// but the last 7 bits) and its member number in that bucket (those bits).
struct ReceivedID: Comparable {
    /// Bytes 0..<8.
    let high: UInt64
    /// Bytes 8..<12.
    let low: UInt32

    init(_ bytes: UnsafeRawBufferPointer) {
        high = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        low = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
    }

    init(high: UInt64, low: UInt32) {
        self.high = high
        self.low = low
    }

    /// The last 7 bits: 0..<128.
    var member: UInt8 { UInt8(truncatingIfNeeded: low) & ReceivedIDs.memberBits }

    func isInBucket(of other: ReceivedID) -> Bool {
        high == other.high && low >> 7 == other.low >> 7
    }

    /// Appends the 12 bytes.
    func append(to bytes: inout [UInt8]) {
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func < (a: ReceivedID, b: ReceivedID) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }
}

/// The ids of one batch with their indices in it, sorted by id (copies of
/// one id by index): what ``ReceivedIDs`` walks bucket by bucket.
struct ReceivedIDList {
    struct Entry {
        let id: ReceivedID
        let index: Int
    }

    private(set) var entries: [Entry] = []

    mutating func append(_ id: UnsafeRawBufferPointer, index: Int) {
        entries.append(Entry(id: ReceivedID(id), index: index))
    }

    /// Sorts the entries by id (copies of one id by index). Only when the
    /// ids do not already ascend (an edge box's ObjectIds in the order it
    /// read them do).
    mutating func sort() {
        if !isInOrder() {
            // Two words per entry: the id's first 8 bytes, then its last 4
            // above the index (a batch holds far fewer than 2³² records).
            entries.sort {
                $0.id.high != $1.id.high
                    ? $0.id.high < $1.id.high
                    : UInt64($0.id.low) << 32 | UInt64(truncatingIfNeeded: $0.index)
                        < UInt64($1.id.low) << 32 | UInt64(truncatingIfNeeded: $1.index)
            }
        }
    }

    private func isInOrder() -> Bool {
        for i in entries.indices.dropFirst()
        where entries[i].id < entries[i - 1].id
            || (entries[i].id == entries[i - 1].id && entries[i].index < entries[i - 1].index)
        {
            return false
        }
        return true
    }
}

/// What the stored groups of one bucket say of its 128 members: each one's
/// content checksum, ``unknownContent`` for members received before
/// contents were kept, nil for members not received.
struct BucketMembers {
    static let unknownContent: Int64 = -1
    private static let absent = Int64.min
    private var contents = [Int64](repeating: BucketMembers.absent, count: 128)

    subscript(member: UInt8) -> Int64? {
        get {
            let value = contents[Int(member & ReceivedIDs.memberBits)]
            return value == Self.absent ? nil : value
        }
        set { contents[Int(member & ReceivedIDs.memberBits)] = newValue ?? Self.absent }
    }

    mutating func clear() {
        for i in contents.indices { contents[i] = Self.absent }
    }
}
