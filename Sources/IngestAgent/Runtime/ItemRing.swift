/// A first-in-first-out queue in a ring buffer that doubles when full.
/// Not thread-safe: ``JobLoop`` holds its mutex around every call.
struct ItemRing<Item> {
    private var slots: [Item?] = Array(repeating: nil, count: 64)
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ item: Item) {
        if count == slots.count { grow() }
        slots[(head + count) & (slots.count - 1)] = item
        count += 1
    }

    mutating func popFirst() -> Item? {
        guard count > 0 else { return nil }
        let item = slots[head]
        slots[head] = nil
        head = (head + 1) & (slots.count - 1)
        count -= 1
        if count == 0 && slots.count > Self.keptCapacity {
            // A burst is over: give its memory back.
            slots = Array(repeating: nil, count: 64)
            head = 0
        }
        return item
    }

    /// The capacity an empty ring keeps; above it, emptying shrinks it to 64.
    static var keptCapacity: Int { 1_024 }

    var capacity: Int { slots.count }

    /// Doubles the capacity (always a power of two), oldest item first.
    private mutating func grow() {
        var grown = [Item?](repeating: nil, count: slots.count * 2)
        for index in 0..<count { grown[index] = slots[(head + index) & (slots.count - 1)] }
        slots = grown
        head = 0
    }
}
