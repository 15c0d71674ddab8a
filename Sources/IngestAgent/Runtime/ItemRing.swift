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
        return item
    }

    /// Doubles the capacity (always a power of two), oldest item first.
    private mutating func grow() {
        var grown = [Item?](repeating: nil, count: slots.count * 2)
        for index in 0..<count { grown[index] = slots[(head + index) & (slots.count - 1)] }
        slots = grown
        head = 0
    }
}
