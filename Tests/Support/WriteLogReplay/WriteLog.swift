import Glibc

/// A log written by the kernel's `dm-log-writes` target: every write, flush,
/// FUA and discard that reached a block device, in the order the device
/// completed them, plus marks a test added (`dmsetup message DEV 0 mark NAME`).
///
/// The layout (drivers/md/dm-log-writes.c;
/// Documentation/admin-guide/device-mapper/log-writes.rst): a super block
/// at byte 0 (magic, version, number of entries, sector size), then one entry
/// after another, each one sector holding the entry's header (and a mark's
/// text) followed by the data written, `sectorCount` sectors of it (none for
/// a discard, a bare flush or a mark). Sectors are the logged device's
/// logical block size, as the super block says. Integers are little-endian.
///
///     let log = try WriteLog(path: "log.img")
///     for entry in log.entries where entry.flags.contains(.flush) { … }
public struct WriteLog: Sendable {
    /// "WRITELOG" would not fit: the kernel's `WRITE_LOG_MAGIC`.
    public static let magic: UInt64 = 0x6a_7366_7773_6872
    public static let version: UInt64 = 1

    public let path: String
    /// Bytes per sector of the logged device (and of the log's layout).
    public let sectorSize: Int
    public let entries: [WriteLogEntry]

    public init(path: String) throws(WriteLogError) {
        self.path = path
        let file = try LogFile(path: path)
        defer { file.close() }
        var superBlock = [UInt8](repeating: 0, count: 28)
        guard try file.read(into: &superBlock, at: 0) == superBlock.count else {
            throw .notALog(path: path, reason: "it is shorter than a super block (28 bytes)")
        }
        let magic = superBlock.littleEndian(UInt64.self, at: 0)
        guard magic == Self.magic else {
            throw .notALog(
                path: path,
                reason:
                    "its first 8 bytes are 0x\(String(magic, radix: 16)), not dm-log-writes' magic 0x\(String(Self.magic, radix: 16))"
            )
        }
        let version = superBlock.littleEndian(UInt64.self, at: 8)
        guard version == Self.version else {
            throw .notALog(path: path, reason: "log version \(version); this replayer reads version \(Self.version)")
        }
        let count = superBlock.littleEndian(UInt64.self, at: 16)
        let sectorSize = Int(superBlock.littleEndian(UInt32.self, at: 24))
        guard sectorSize >= 512, sectorSize <= 65536, sectorSize & (sectorSize - 1) == 0 else {
            throw .notALog(path: path, reason: "sector size \(sectorSize) is not a power of two from 512 to 65536")
        }
        self.sectorSize = sectorSize

        var entries: [WriteLogEntry] = []
        entries.reserveCapacity(Int(min(count, 1 << 20)))
        var header = [UInt8](repeating: 0, count: sectorSize)
        var offset = UInt64(sectorSize)
        for index in 0..<Int(count) {
            guard try file.read(into: &header, at: offset) == sectorSize else {
                throw .truncated(path: path, entry: index, of: Int(count), offset: offset)
            }
            let flags = WriteLogEntry.Flags(rawValue: header.littleEndian(UInt64.self, at: 16))
            let sectorCount = header.littleEndian(UInt64.self, at: 8)
            let dataLength = Int(header.littleEndian(UInt64.self, at: 24))
            var mark: String?
            if flags.contains(.mark) {
                guard dataLength <= sectorSize - 32 else {
                    throw .notALog(
                        path: path,
                        reason: "entry \(index) is a mark of \(dataLength) bytes, more than its sector holds"
                    )
                }
                mark = String(decoding: header[32..<(32 + dataLength)], as: UTF8.self)
            }
            let entry = WriteLogEntry(
                index: index,
                sector: header.littleEndian(UInt64.self, at: 0),
                sectorCount: sectorCount,
                flags: flags,
                mark: mark,
                dataOffset: offset + UInt64(sectorSize)
            )
            offset = entry.dataOffset + (entry.carriesData ? sectorCount * UInt64(sectorSize) : 0)
            entries.append(entry)
        }
        guard file.size >= offset else {
            throw .truncated(path: path, entry: Int(count) - 1, of: Int(count), offset: offset)
        }
        self.entries = entries
    }
}

/// One entry of a ``WriteLog``.
public struct WriteLogEntry: Sendable, Equatable {
    public struct Flags: OptionSet, Sendable, Equatable {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        /// Everything the device completed before this entry is durable.
        public static let flush = Flags(rawValue: 1 << 0)
        /// This entry's own data is durable once it completed.
        public static let fua = Flags(rawValue: 1 << 1)
        public static let discard = Flags(rawValue: 1 << 2)
        public static let mark = Flags(rawValue: 1 << 3)
        public static let metadata = Flags(rawValue: 1 << 4)
    }

    public let index: Int
    /// The first sector written, in the log's sector size.
    public let sector: UInt64
    public let sectorCount: UInt64
    public let flags: Flags
    /// A mark's text.
    public let mark: String?
    /// Where the written data starts in the log file.
    public let dataOffset: UInt64

    /// The log holds `sectorCount` sectors of data after the header.
    public var carriesData: Bool { !flags.contains(.discard) && !flags.contains(.mark) }
    /// Changes the device's contents (data or a discard).
    public var changesDevice: Bool { !flags.contains(.mark) && sectorCount > 0 }
    /// A flush or FUA: a point the device promised durability at.
    public var isBarrier: Bool { !flags.isDisjoint(with: [.flush, .fua]) }

    public init(index: Int, sector: UInt64, sectorCount: UInt64, flags: Flags, mark: String?, dataOffset: UInt64) {
        self.index = index
        self.sector = sector
        self.sectorCount = sectorCount
        self.flags = flags
        self.mark = mark
        self.dataOffset = dataOffset
    }
}

public enum WriteLogError: Error, CustomStringConvertible, Equatable {
    case cannotOpen(path: String, errno: Int32)
    case notALog(path: String, reason: String)
    case truncated(path: String, entry: Int, of: Int, offset: UInt64)
    case io(path: String, operation: String, errno: Int32)
    case outsideImage(path: String, entry: Int, end: UInt64, imageSize: UInt64)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let code):
            "Cannot open '\(path)': \(String(cString: strerror(code)))."
        case .notALog(let path, let reason):
            "'\(path)' is not a dm-log-writes log: \(reason)."
        case .truncated(let path, let entry, let count, let offset):
            "'\(path)' ends inside entry \(entry) of the \(count) its super block counts (byte \(offset)): was the log device removed (dmsetup remove) before it was copied?"
        case .io(let path, let operation, let code):
            "\(operation) '\(path)' failed: \(String(cString: strerror(code)))."
        case .outsideImage(let path, let entry, let end, let size):
            "Entry \(entry) writes up to byte \(end), past the end of '\(path)' (\(size) bytes): the base image is not the logged device."
        }
    }
}

extension [UInt8] {
    func littleEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for byte in (0..<MemoryLayout<T>.size).reversed() {
            value = value << 8 | T(self[offset + byte])
        }
        return value
    }
}
