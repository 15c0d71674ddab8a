import Foundation
import TestSupport
import Testing

@testable import WriteLogReplay

/// Builds a dm-log-writes log as the kernel lays it out
/// (drivers/md/dm-log-writes.c: log_super, log_one_block, write_metadata).
struct LogBuilder {
    struct Entry {
        var sector: UInt64 = 0
        var sectorCount: UInt64 = 0
        var flags: WriteLogEntry.Flags = []
        var mark: String? = nil
        var fill: UInt8 = 0
    }

    var sectorSize = 512
    var entries: [Entry] = []
    /// Entries the super block counts (the kernel updates it at FUA writes and marks).
    var countedEntries: Int?

    mutating func write(_ sector: UInt64, _ count: UInt64, fill: UInt8, _ flags: WriteLogEntry.Flags = []) {
        entries.append(Entry(sector: sector, sectorCount: count, flags: flags, fill: fill))
    }
    mutating func flush() { entries.append(Entry(flags: .flush)) }
    mutating func mark(_ name: String) { entries.append(Entry(flags: .mark, mark: name)) }
    mutating func discard(_ sector: UInt64, _ count: UInt64) {
        entries.append(Entry(sector: sector, sectorCount: count, flags: .discard))
    }

    func bytes() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sectorSize)
        func put<T: FixedWidthInteger>(_ value: T, into buffer: inout [UInt8], at offset: Int) {
            for byte in 0..<MemoryLayout<T>.size {
                buffer[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * byte))
            }
        }
        put(WriteLog.magic, into: &out, at: 0)
        put(WriteLog.version, into: &out, at: 8)
        put(UInt64(countedEntries ?? entries.count), into: &out, at: 16)
        put(UInt32(sectorSize), into: &out, at: 24)
        for entry in entries {
            var header = [UInt8](repeating: 0, count: sectorSize)
            put(entry.sector, into: &header, at: 0)
            put(entry.sectorCount, into: &header, at: 8)
            put(entry.flags.rawValue, into: &header, at: 16)
            let text = Array((entry.mark ?? "").utf8)
            put(UInt64(text.count), into: &header, at: 24)
            header.replaceSubrange(32..<(32 + text.count), with: text)
            out += header
            if !entry.flags.contains(.discard), !entry.flags.contains(.mark) {
                out += [UInt8](repeating: entry.fill, count: Int(entry.sectorCount) * sectorSize)
            }
        }
        return out
    }

    func save(in directory: TemporaryDirectory, as name: String = "log.img") throws -> String {
        let path = directory.file(name)
        try Data(bytes()).write(to: URL(fileURLWithPath: path))
        return path
    }
}

func image(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

@Suite struct WriteLogTests {
    @Test func readsEachEntryWhereTheKernelPutIt() throws {
        let directory = try TemporaryDirectory()
        var builder = LogBuilder()
        builder.write(2, 2, fill: 0xAA)
        builder.flush()
        builder.write(4, 1, fill: 0xBB, .fua)
        builder.mark("batch-1")
        builder.discard(0, 2)
        builder.write(6, 1, fill: 0xCC, [.flush, .fua])
        let log = try WriteLog(path: builder.save(in: directory))

        #expect(log.sectorSize == 512)
        #expect(log.entries.map(\.sector) == [2, 0, 4, 0, 0, 6])
        #expect(log.entries.map(\.sectorCount) == [2, 0, 1, 0, 2, 1])
        #expect(log.entries.map(\.flags) == [[], .flush, .fua, .mark, .discard, [.flush, .fua]])
        #expect(log.entries.map(\.mark) == [nil, nil, nil, "batch-1", nil, nil])
        // Headers at 512, 512+512+1024, …: data right after each header, none for a flush, mark or discard.
        #expect(log.entries.map(\.dataOffset) == [1024, 2560, 3072, 4096, 4608, 5120])
        #expect(log.entries.map(\.isBarrier) == [false, true, true, false, false, true])
        #expect(log.entries.map(\.changesDevice) == [true, false, true, false, true, true])
    }

    @Test func refusesAFileThatIsNotALogAndSaysWhy() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("disk.img")
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            try WriteLog(path: path)
        } throws: { error in
            let text = (error as? WriteLogError)?.description ?? ""
            return text.contains("not a dm-log-writes log") && text.contains("0x5a5a5a5a5a5a5a5a")
        }
        #expect(throws: WriteLogError.cannotOpen(path: directory.file("missing"), errno: ENOENT)) {
            try WriteLog(path: directory.file("missing"))
        }
    }

    @Test func aLogCutShortIsRefusedNotReadPastItsEnd() throws {
        let directory = try TemporaryDirectory()
        var builder = LogBuilder()
        builder.write(0, 4, fill: 1)
        builder.flush()
        builder.countedEntries = 3  // the super block counts an entry the file lacks
        let path = try builder.save(in: directory)
        #expect(throws: WriteLogError.truncated(path: path, entry: 2, of: 3, offset: UInt64(512 + 512 + 2048 + 512))) {
            try WriteLog(path: path)
        }
        // Data cut short: the last entry's header is there, its data is not.
        var short = LogBuilder()
        short.write(0, 4, fill: 1)
        let bytes = short.bytes().dropLast(512)
        let cut = directory.file("cut.img")
        try Data(bytes).write(to: URL(fileURLWithPath: cut))
        #expect(throws: WriteLogError.self) { try WriteLog(path: cut) }
    }

    @Test func replayWritesTheDataInOrderAndZeroesDiscards() throws {
        let directory = try TemporaryDirectory()
        var builder = LogBuilder()
        builder.write(1, 2, fill: 0xAA)
        builder.flush()
        builder.write(2, 2, fill: 0xBB)  // overwrites the second sector of the first write
        builder.discard(6, 1)
        let log = try WriteLog(path: builder.save(in: directory))
        let base = directory.file("base.img")
        try Data(repeating: 0x11, count: 8 * 512).write(to: URL(fileURLWithPath: base))

        let whole = try DiskImage(copying: base, to: directory.file("whole.img"))
        try whole.apply(log.entries, from: log)
        let sectors = try image(whole.path).chunked(512).map { Set($0) }
        #expect(sectors == [[0x11], [0xAA], [0xBB], [0xBB], [0x11], [0x11], [0x00], [0x11]])

        let firstOnly = try DiskImage(copying: base, to: directory.file("first.img"))
        try firstOnly.apply(log.entries[0..<2], from: log)
        #expect(
            try image(firstOnly.path).chunked(512).map { Set($0) } == [
                [0x11], [0xAA], [0xAA], [0x11], [0x11], [0x11], [0x11], [0x11],
            ]
        )
        #expect(try image(base) == [UInt8](repeating: 0x11, count: 4096), "the base image is never changed")
    }

    @Test func aWritePastTheImageSaysTheBaseIsNotTheLoggedDevice() throws {
        let directory = try TemporaryDirectory()
        var builder = LogBuilder()
        builder.write(7, 2, fill: 1)
        let log = try WriteLog(path: builder.save(in: directory))
        try Data(count: 8 * 512).write(to: URL(fileURLWithPath: directory.file("base.img")))
        let target = try DiskImage(path: directory.file("base.img"))
        #expect(throws: WriteLogError.outsideImage(path: target.path, entry: 0, end: 9 * 512, imageSize: 8 * 512)) {
            try target.apply(log.entries, from: log)
        }
    }

    @Test func copiesKeepHolesAndData() throws {
        let directory = try TemporaryDirectory()
        let source = directory.file("sparse.img")
        #expect(FileManager.default.createFile(atPath: source, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: source))
        try handle.seek(toOffset: 3 << 20)
        try handle.write(contentsOf: Data(repeating: 7, count: 4096))
        try handle.truncate(atOffset: 8 << 20)
        try handle.close()
        try DiskImage.copy(source, to: directory.file("copy.img"))
        #expect(try image(directory.file("copy.img")) == image(source))
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
