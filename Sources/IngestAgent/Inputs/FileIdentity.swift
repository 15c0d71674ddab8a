#if canImport(Glibc)
import Glibc
#endif

/// Who a followed file is, independent of its name: device and inode, plus
/// a fingerprint of its first line so that a reused inode is not mistaken
/// for the old file (as Vector's checksum fingerprinting does).
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64

    /// The source name positions are committed under.
    var source: String { "file:\(device):\(inode)" }

    static func of(fd: Int32) -> (FileIdentity, size: Int64)? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return (FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), Int64(info.st_size))
    }

    static func of(path: String) -> (FileIdentity, size: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return (FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), Int64(info.st_size))
    }
}

/// FNV-1a of a file's first line (up to 256 bytes, with its newline), or
/// nil while the first line is incomplete.
struct Fingerprint: Hashable {
    var length: Int
    var hash: UInt64

    static func read(fd: Int32) -> Fingerprint? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        let end = buffer[0..<n].firstIndex(of: 0x0A).map { $0 + 1 } ?? (n == 256 ? 256 : nil)
        guard let end else { return nil }
        return Fingerprint(length: end, hash: fnv(buffer[0..<end]))
    }

    /// Whether the file's first `length` bytes still hash to `hash`.
    func matches(fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: length)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return n == length && Fingerprint.fnv(buffer[0..<n]) == hash
    }

    static func fnv(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}

/// The committed position of one file: `<offset> <fp length> <fp hash> <path>`.
struct FilePosition: Equatable {
    var offset: Int64
    var fingerprint: Fingerprint?
    var path: String

    var encoded: String {
        "\(offset) \(fingerprint?.length ?? 0) \(String(fingerprint?.hash ?? 0, radix: 16)) \(path)"
    }

    init(offset: Int64, fingerprint: Fingerprint?, path: String) {
        self.offset = offset
        self.fingerprint = fingerprint
        self.path = path
    }

    init?(encoded: String) {
        let parts = encoded.split(separator: " ", maxSplits: 3)
        guard parts.count == 4, let offset = Int64(parts[0]), let length = Int(parts[1]),
            let hash = UInt64(parts[2], radix: 16)
        else {
            return nil
        }
        self.offset = offset
        fingerprint = length > 0 ? Fingerprint(length: length, hash: hash) : nil
        path = String(parts[3])
    }
}
