import Testing

@testable import EdgeIngestModel

@Suite struct LineFramerTests {
    enum Got: Equatable {
        case line(String, Int, Int64)
        case overlong(Int, Int, Int64)
    }

    func frame(_ chunks: [String], max: Int = 16, finish: Bool = true) -> (events: [Got], peak: Int) {
        var framer = LineFramer(delimiter: 0x0A, maxLineBytes: max)
        var events: [Got] = []
        var peak = 0
        let handle: (LineFramer.Event) -> Void = { event in
            switch event {
            case .line(let bytes, let n, let end): events.append(.line(String(decoding: bytes, as: UTF8.self), n, end))
            case .overlong(let n, let bytes, let end): events.append(.overlong(n, bytes, end))
            }
        }
        for chunk in chunks {
            Array(chunk.utf8).withUnsafeBytes { framer.feed($0, handle) }
            peak = Swift.max(peak, framer.pendingBytes)
        }
        if finish { framer.finish(handle) }
        return (events, peak)
    }

    @Test func linesSplitAcrossChunksAndCRLF() {
        let got = frame(["ab", "c\r\nde", "f\ng"]).events
        #expect(got == [.line("abc", 1, 5), .line("def", 2, 9), .line("g", 3, 10)])
    }

    @Test func partialLastLineIsKeptWhenNotFinished() {
        let got = frame(["abc\nde"], finish: false).events
        #expect(got == [.line("abc", 1, 4)])
    }

    @Test func overlongLinesAreSkippedWithoutBufferingThem() {
        let huge = String(repeating: "x", count: 10_000)
        let (got, _) = frame(["ok\n", huge, huge, "\nnext\n"])
        #expect(got == [.line("ok", 1, 3), .overlong(2, 20_000, 20_004), .line("next", 3, 20_009)])
        // Memory held for the over-long line stays bounded by the limit.
        var framer = LineFramer(delimiter: 0x0A, maxLineBytes: 16)
        Array(huge.utf8).withUnsafeBytes { framer.feed($0) { _ in } }
        #expect(framer.pendingBytes == 10_000)  // counted…
        #expect(framer.bufferedBytes == 0)  // …but not held
    }

    @Test func overlongLineInOneChunk() {
        let got = frame([String(repeating: "y", count: 40) + "\nz\n"]).events
        #expect(got == [.overlong(1, 40, 41), .line("z", 2, 43)])
    }
}
