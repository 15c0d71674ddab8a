import Glibc

/// A disk image the log's writes are replayed onto.
///
///     let image = try DiskImage(copying: "base.img", to: "state.img")
///     try image.apply(log.entries[0..<100], from: log)
public final class DiskImage {
    public let path: String
    private let file: LogFile
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)

    /// Opens an image to change in place.
    public init(path: String) throws(WriteLogError) {
        self.path = path
        file = try LogFile(path: path, writable: true)
    }

    /// Makes `destination` a copy of `source` (its data regions only: holes
    /// stay holes) and opens it.
    public convenience init(copying source: String, to destination: String) throws(WriteLogError) {
        try Self.copy(source, to: destination)
        try self.init(path: destination)
    }

    deinit { file.close() }

    public var size: UInt64 { file.size }

    /// Writes what the entries wrote, in the order given: data entries
    /// their data, discards zeros, flushes and marks nothing.
    public func apply(_ entries: some Sequence<WriteLogEntry>, from log: WriteLog) throws(WriteLogError) {
        let source = try LogFile(path: log.path)
        defer { source.close() }
        let imageSize = size
        for entry in entries where entry.changesDevice {
            let start = entry.sector * UInt64(log.sectorSize)
            let length = entry.sectorCount * UInt64(log.sectorSize)
            guard start + length <= imageSize else {
                throw .outsideImage(path: path, entry: entry.index, end: start + length, imageSize: imageSize)
            }
            var done: UInt64 = 0
            while done < length {
                let chunk = Int(min(UInt64(buffer.count), length - done))
                if entry.flags.contains(.discard) {
                    for i in 0..<chunk { buffer[i] = 0 }
                } else {
                    guard try source.read(into: &buffer, at: entry.dataOffset + done, count: chunk) == chunk else {
                        throw .truncated(
                            path: log.path,
                            entry: entry.index,
                            of: log.entries.count,
                            offset: entry.dataOffset + done
                        )
                    }
                }
                try file.write(buffer, count: chunk, at: start + done)
                done += UInt64(chunk)
            }
        }
    }

    /// Copies `source` to `destination` region by region (SEEK_DATA/SEEK_HOLE).
    public static func copy(_ source: String, to destination: String) throws(WriteLogError) {
        let input = try LogFile(path: source)
        defer { input.close() }
        let output = try LogFile(path: destination, writable: true, create: true)
        defer { output.close() }
        let size = input.size
        guard ftruncate(output.descriptor, off_t(size)) == 0 else {
            throw .io(path: destination, operation: "Sizing", errno: errno)
        }
        // Linux's SEEK_DATA and SEEK_HOLE (Glibc hides them behind _GNU_SOURCE).
        let seekData: Int32 = 3
        let seekHole: Int32 = 4
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position: off_t = 0
        while position < off_t(size) {
            let dataStart = lseek(input.descriptor, position, seekData)
            if dataStart < 0 { break }  // ENXIO: only a hole is left
            let dataEnd = lseek(input.descriptor, dataStart, seekHole)
            var offset = UInt64(dataStart)
            while offset < UInt64(dataEnd) {
                let chunk = try input.read(
                    into: &buffer,
                    at: offset,
                    count: Int(min(UInt64(buffer.count), UInt64(dataEnd) - offset))
                )
                if chunk == 0 { break }
                try output.write(buffer, count: chunk, at: offset)
                offset += UInt64(chunk)
            }
            position = dataEnd
        }
    }
}
