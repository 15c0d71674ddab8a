import Foundation
import TestSupport
import Testing

@testable import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// The socket a `kind = "socket"` input binds appears under its name only
/// once it listens and has its mode: a sender that finds the file connects.
@Suite struct SocketBindTests {
    /// The names the directory saw created and moved in, in order.
    struct DirectoryEvents {
        let fd: Int32

        init(_ directory: String) throws {
            fd = inotify_init1(Int32(IN_NONBLOCK))
            guard fd >= 0, inotify_add_watch(fd, directory, UInt32(IN_CREATE | IN_MOVED_TO)) >= 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        }

        func read() -> [(created: Bool, name: String)] {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            var events: [(Bool, String)] = []
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while n > 0, offset + header <= n {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (
                        raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let nameBytes = buffer[(offset + header)..<(offset + header + length)].prefix { $0 != 0 }
                events.append((mask & UInt32(IN_CREATE) != 0, String(decoding: nameBytes, as: UTF8.self)))
                offset += header + length
            }
            return events
        }
    }

    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    func connects(_ path: String) -> Bool {
        guard var address = UnixSocket.address(path) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    @Test func theSocketIsMovedInListeningNotCreatedUnderItsName() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("ingestd.sock")
        let events = try DirectoryEvents(dir.path)
        defer { close(events.fd) }
        let fd = try SocketInput.bind(path: path, group: nil)
        defer { close(fd) }
        let seen = events.read()
        #expect(!seen.contains { $0.created && $0.name == "ingestd.sock" }, "\(seen)")
        #expect(seen.contains { !$0.created && $0.name == "ingestd.sock" }, "\(seen)")
        #expect(mode(path) == 0o600)
        #expect(mode(path + "~") == nil, "the side name is gone")
        #expect(connects(path))
    }

    @Test func anOldSocketFileAndAnOldSideNameAreReplaced() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("ingestd.sock")
        let first = try SocketInput.bind(path: path, group: nil)
        close(first)  // a crashed agent's socket file stays behind
        let stale = try SocketInput.bind(path: path + "~", group: nil)
        close(stale)
        #expect(!connects(path))
        let fd = try SocketInput.bind(path: path, group: nil)
        defer { close(fd) }
        #expect(connects(path))
        #expect(mode(path + "~") == nil)
    }

    @Test func aPathWithNoRoomForTheSideNameIsBoundInPlace() throws {
        let dir = try TemporaryDirectory()
        let room = UnixSocket.maxPathBytes - dir.path.utf8.count - 1
        let path = dir.file(String(repeating: "s", count: room))
        #expect(UnixSocket.address(path) != nil && UnixSocket.address(path + "~") == nil)
        let fd = try SocketInput.bind(path: path, group: nil)
        defer { close(fd) }
        #expect(connects(path))
        #expect(mode(path) == 0o600)
    }

    @Test func aMissingGroupIsRefusedAndLeavesNoSocketFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("ingestd.sock")
        #expect(throws: AgentError.self) {
            _ = try SocketInput.bind(path: path, group: "edgeingest-no-such-group")
        }
        #expect(mode(path) == nil && mode(path + "~") == nil)
        // Bound in place (no room for the side name): its file goes too.
        let long = dir.file(String(repeating: "s", count: UnixSocket.maxPathBytes - dir.path.utf8.count - 1))
        #expect(throws: AgentError.self) {
            _ = try SocketInput.bind(path: long, group: "edgeingest-no-such-group")
        }
        #expect(mode(long) == nil)
    }
}
