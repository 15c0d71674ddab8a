import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP client for requests curl will not send.
public final class RawClient {
    public let fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            close(fd)
            throw ToolFailure("connect to 127.0.0.1:\(port) failed")
        }
    }

    /// Sends `text`; false when the server closed the connection.
    @discardableResult
    public func send(_ text: String) -> Bool {
        Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } >= 0
    }

    /// One answer on a kept-alive connection: its head, then as many body
    /// bytes as its Content-Length says; "" if none came in `timeoutMs`.
    public func readAnswer(timeoutMs: Int32) -> String {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: out, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let length =
                    text[..<headEnd.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.startIndex, to: headEnd.upperBound) >= length {
                    return text
                }
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, timeoutMs) > 0 else { return text }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return String(decoding: out, as: UTF8.self) }
            out += buffer[0..<n]
        }
    }

    /// Whether the server closed the connection (without a word) within `timeoutMs`.
    public func closedByServer(timeoutMs: Int32) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMs) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0
    }

    /// Everything until the server closes or `timeoutMs` passes.
    public func readAll(timeoutMs: Int32) -> String {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, timeoutMs) > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    deinit { close(fd) }
}
