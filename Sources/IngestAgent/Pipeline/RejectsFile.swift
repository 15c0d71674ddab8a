import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Appends every rejected line to a file (mode 0600) as one JSON object per
/// line: when, which input, which line, why, and the line itself, so that
/// nothing an input received vanishes. Over-long lines are recorded by
/// length only (they were never held in memory).
final class RejectsFile: Sendable {
    private let fd: PlainMutex<Int32>
    let path: String

    init(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AgentError(
                .unusableFile,
                "Cannot open the rejects file '\(path)': \(String(cString: strerror(errno))). Check agent.rejects_file and its directory's permissions."
            )
        }
        self.fd = PlainMutex(fd)
        self.path = path
    }

    deinit { fd.withLock { _ = close($0) } }

    func append(input: String, line: Int, rejection: LineRejection, raw: UnsafeRawBufferPointer?, rawLength: Int) {
        var out: [UInt8] = []
        out.reserveCapacity((raw?.count ?? 0) + 200)
        func key(_ k: String) { out.append(contentsOf: ",\"\(k)\":".utf8) }
        out.append(contentsOf: "{\"at\":\"".utf8)
        out.append(contentsOf: isoNow().utf8)
        out.append(UInt8(ascii: "\""))
        key("input")
        JSONWriter.appendString(input, to: &out)
        key("line")
        out.append(contentsOf: String(line).utf8)
        key("reason")
        JSONWriter.appendString(rejection.reason, to: &out)
        key("message")
        JSONWriter.appendString(rejection.message, to: &out)
        if let raw {
            if let text = String(validating: raw, as: UTF8.self) {
                key("raw")
                JSONWriter.appendString(text, to: &out)
            } else {
                key("raw_hex")
                out.append(UInt8(ascii: "\""))
                let digits = Array("0123456789abcdef".utf8)
                for b in raw {
                    out.append(digits[Int(b >> 4)])
                    out.append(digits[Int(b & 0xF)])
                }
                out.append(UInt8(ascii: "\""))
            }
        }
        key("raw_bytes")
        out.append(contentsOf: String(rawLength).utf8)
        out.append(contentsOf: "}\n".utf8)
        fd.withLock { fd in
            out.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return }
                    offset += n
                }
            }
        }
    }
}
