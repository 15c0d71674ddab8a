import Glibc

/// A file opened for positioned reads and writes (the log, an image).
struct LogFile {
    let path: String
    let descriptor: Int32

    init(path: String, writable: Bool = false, create: Bool = false) throws(WriteLogError) {
        self.path = path
        let flags = (writable ? O_RDWR : O_RDONLY) | (create ? O_CREAT | O_TRUNC : 0) | O_CLOEXEC
        descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, errno: errno) }
    }

    var size: UInt64 {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? UInt64(status.st_size) : 0
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    func read(into buffer: inout [UInt8], at offset: UInt64, count: Int? = nil) throws(WriteLogError) -> Int {
        let wanted = count ?? buffer.count
        var done = 0
        while done < wanted {
            let n = buffer.withUnsafeMutableBytes { bytes in
                pread(descriptor, bytes.baseAddress! + done, wanted - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "Reading", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func write(_ buffer: [UInt8], count: Int, at offset: UInt64) throws(WriteLogError) {
        var done = 0
        while done < count {
            let n = buffer.withUnsafeBytes { bytes in
                pwrite(descriptor, bytes.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "Writing", errno: errno)
            }
            done += n
        }
    }

    func close() { _ = Glibc.close(descriptor) }
}
