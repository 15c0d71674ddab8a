import CZlib
import EdgeIngestModel

/// gzip compression of request bodies (zlib; level 1 by default: the
/// fastest level keeps most of the size win on NDJSON, docs/BENCHMARKS.md).
public enum Gzip {
    public static func compress(_ input: ArraySlice<UInt8>, level: Int32 = 1) throws -> [UInt8] {
        var stream = z_stream()
        guard edgeingest_deflate_init_gzip(&stream, level) == Z_OK else {
            throw EdgeIngestError(.storage, "zlib could not start a gzip stream.")
        }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        let produced: Int = try input.withUnsafeBytes { inBytes in
            try output.withUnsafeMutableBytes { outBytes in
                stream.next_in = UnsafeMutablePointer(mutating: inBytes.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(inBytes.count)
                stream.next_out = outBytes.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(outBytes.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else {
                    throw EdgeIngestError(.storage, "zlib could not compress a batch.")
                }
                return outBytes.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(produced...)
        return output
    }

    /// Decompresses a gzip body (used by tests and the receiving side).
    /// More than `limit` bytes of output throw ``OutputTooLarge`` (a gzip
    /// bomb stops there).
    public static func decompress(_ input: [UInt8], limit: Int = .max) throws -> [UInt8] {
        var stream = z_stream()
        guard edgeingest_inflate_init_gzip(&stream) == Z_OK else {
            throw EdgeIngestError(.storage, "zlib could not start a gzip stream.")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try input.withUnsafeBytes { inBytes in
            stream.next_in = UnsafeMutablePointer(mutating: inBytes.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(inBytes.count)
            while true {
                let (rc, produced) = chunk.withUnsafeMutableBytes { outBytes -> (Int32, Int) in
                    stream.next_out = outBytes.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(outBytes.count)
                    let rc = inflate(&stream, Z_NO_FLUSH)
                    return (rc, outBytes.count - Int(stream.avail_out))
                }
                if output.count + produced > limit { throw OutputTooLarge(limit: limit) }
                output += chunk[0..<produced]
                if rc == Z_STREAM_END { return }
                guard rc == Z_OK else { throw EdgeIngestError(.storage, "The gzip body is damaged (zlib \(rc)).") }
            }
        }
        return output
    }

    /// A gzip body decompresses to more than the allowed bytes.
    public struct OutputTooLarge: Error {
        public let limit: Int
    }
}
