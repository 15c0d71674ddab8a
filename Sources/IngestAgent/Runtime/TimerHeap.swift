/// Items waiting for a deadline, earliest first; items with the same
/// deadline leave in the order they came. A binary min-heap.
/// Not thread-safe: ``JobLoop`` holds its mutex around every call.
struct TimerHeap<Item> {
    private struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var item: Item
    }

    private var entries: [Entry] = []
    private var sequence: UInt64 = 0

    var count: Int { entries.count }
    var earliestDeadline: UInt64? { entries.first?.deadline }

    mutating func insert(_ item: Item, deadline: UInt64) {
        sequence &+= 1
        entries.append(Entry(deadline: deadline, sequence: sequence, item: item))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// The earliest item if its deadline is at or before `now`.
    mutating func popDue(now: UInt64) -> Item? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if entries.isEmpty && entries.capacity > 1_024 {
            entries = []  // a burst is over: give its memory back
        }
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < entries.count else { break }
                var child = left
                if left + 1 < entries.count && Self.precedes(entries[left + 1], entries[left]) { child = left + 1 }
                guard Self.precedes(entries[child], entries[parent]) else { break }
                entries.swapAt(child, parent)
                parent = child
            }
        }
        return first.item
    }

    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }
}
