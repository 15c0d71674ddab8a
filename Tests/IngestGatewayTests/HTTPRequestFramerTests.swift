import Testing

@testable import IngestGateway

/// `HTTPRequestFramer` cuts the same requests out of a connection's bytes
/// however they arrive (the fuzz target, `scripts/fuzz.sh http`, checks
/// this on generated input; these are the cases named in issue 23).
@Suite struct HTTPRequestFramerTests {
    /// Every step's outcome for `bytes` fed in reads of `size` bytes.
    func frame(_ text: String, readSize size: Int) -> [HTTPRequestFramer.Step] {
        let bytes = Array(text.utf8)
        var framer = HTTPRequestFramer(maxHeadBytes: 256, maxBodyBytes: 64)
        var steps: [HTTPRequestFramer.Step] = []
        var offset = 0
        while true {
            let step = framer.next()
            switch step {
            case .request, .continueExpected:
                steps.append(step)
                continue
            case .refused:
                steps.append(step)
                return steps
            case .needMore:
                guard offset < bytes.count else { return steps }
                let end = min(bytes.count, offset + size)
                framer.append(bytes[offset..<end])
                offset = end
            }
        }
    }

    func requests(_ steps: [HTTPRequestFramer.Step]) -> [String] {
        steps.compactMap {
            guard case .request(let request) = $0 else { return nil }
            return "\(request.method) \(request.target) \(String(decoding: request.body, as: UTF8.self))"
        }
    }

    @Test func pipelinedRequestsComeOutTheSameWhateverTheReads() {
        let text =
            "POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: gw\r\n\r\n"
            + "POST /c HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\n\r\nxy"
        let whole = frame(text, readSize: text.utf8.count)
        #expect(requests(whole) == ["POST /a abc", "GET /b ", "POST /c xy"])
        for size in [1, 2, 3, 7, 50] { #expect(frame(text, readSize: size) == whole, "reads of \(size)") }
    }

    @Test func aClientWaitingForContinueIsToldOnce() {
        let text = "POST /a HTTP/1.1\r\nHost: gw\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"
        let steps = frame(text, readSize: 8)
        #expect(steps.filter { $0 == .continueExpected }.count == 1)
        #expect(requests(steps) == ["POST /a hello"])
    }

    @Test(arguments: [
        ("POST /a HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
        ("POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        ("POST /a HTTP/1.1\r\nHost: gw\r\nContent-Length: 65\r\n\r\n", 413),
        ("GET /" + String(repeating: "a", count: 300) + " HTTP/1.1\r\n\r\n", 431),
    ])
    func smugglingShapesAndOversizeAreRefusedAtAnyCut(_ text: String, _ status: Int) {
        for size in [1, 5, text.utf8.count] {
            guard case .refused(let error) = frame(text, readSize: size).last else {
                Issue.record("not refused with reads of \(size)")
                continue
            }
            #expect(error.status == status)
        }
    }
}
