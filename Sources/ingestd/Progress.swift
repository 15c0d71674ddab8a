#if canImport(Glibc)
import Glibc
#endif

/// A one-line progress display on a terminal; silent in pipes and the journal.
final class Progress {
    let total: Int
    let label: String
    private let enabled = isatty(2) == 1
    private var lastShown = 0

    init(total: Int, label: String) {
        self.total = total
        self.label = label
    }

    func update(_ done: Int) {
        guard enabled, total > 0, done == total || done - lastShown >= max(1, total / 100) else { return }
        lastShown = done
        printErrorInline("\r\(done)/\(total) \(label) (\(done * 100 / total) %)")
    }

    func finish() {
        if enabled && total > 0 { printErrorInline("\n") }
    }
}

func printErrorInline(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
