import CZstd

/// How a segment's payload is stored (`segments.codec`, docs/QUEUE.md
/// "Compressed segments"): 0 the JSON lines as they are, 1 one zstd frame
/// of them. Compressed when committed, under the queue's lock, with one
/// reused context; decompressed when read, into exactly the declared
/// `payload_bytes` (more or less is damage).
///
/// zstd level 1, chosen by measurement (docs/BENCHMARKS.md): on the
/// realistic readings, 1,000 per segment, it compressed 22× at 1.4 GB/s
/// and decompressed at 3.1 GB/s here, where zlib level 1 gave 11.7× at
/// 0.44 / 0.61 GB/s and LZ4 6.7×.
final class SegmentCodec {
    static let plain: Int64 = 0
    static let zstd: Int64 = 1

    /// Payloads smaller than this are stored plain: a frame's overhead
    /// would eat what a one-reading commit saves.
    static let minimumCompressedBytes = 256

    private let compression: OpaquePointer?
    private let decompression: OpaquePointer?
    /// Where frames are compressed to, reused, never cleared: only the
    /// pages a frame is written to become resident (a zeroed buffer of
    /// `ZSTD_compressBound` bytes held ~0.7 MB for a commit of 4,000
    /// readings that compresses to ~0.1 MB).
    private var output = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    init() {
        compression = ZSTD_createCCtx()
        decompression = ZSTD_createDCtx()
    }

    deinit {
        ZSTD_freeCCtx(compression)
        ZSTD_freeDCtx(decompression)
        output.deallocate()
    }

    /// Calls `body` with the bytes to store and their codec: a zstd frame
    /// when it is smaller than `payload`, else `payload` itself.
    func encode<R>(
        _ payload: UnsafeRawBufferPointer,
        _ body: (_ stored: UnsafeRawBufferPointer, _ codec: Int64) throws -> R
    ) rethrows -> R {
        guard payload.count >= Self.minimumCompressedBytes, let compression else {
            return try body(payload, Self.plain)
        }
        let bound = ZSTD_compressBound(payload.count)
        if output.count < bound {
            output.deallocate()
            output = .allocate(byteCount: bound, alignment: 16)
        }
        let written = ZSTD_compressCCtx(compression, output.baseAddress, bound, payload.baseAddress, payload.count, 1)
        guard ZSTD_isError(written) == 0, written < payload.count else { return try body(payload, Self.plain) }
        return try body(UnsafeRawBufferPointer(rebasing: output[..<written]), Self.zstd)
    }

    /// The payload of a zstd frame that must hold exactly `plainBytes`,
    /// or what is wrong with the frame.
    func decode(_ stored: UnsafeRawBufferPointer, plainBytes: Int64) -> Result<[UInt8], Damage> {
        let declared = ZSTD_getFrameContentSize(stored.baseAddress, stored.count)
        guard declared == UInt64(plainBytes) else {
            return .failure(
                Damage(
                    message: declared >= ZSTD_CONTENTSIZE_ERROR
                        ? "its compressed payload is not a zstd frame with its size"
                        : "its compressed payload holds \(declared) bytes, not the \(plainBytes) it declares"
                )
            )
        }
        guard let decompression else { return .failure(Damage(message: "no zstd context (out of memory)")) }
        // Not zeroed first: zstd writes every byte of a frame it accepts,
        // and a frame that comes out short or fails is not kept.
        var written = 0
        let plain = [UInt8](unsafeUninitializedCapacity: Int(plainBytes)) { out, initialized in
            written = ZSTD_decompressDCtx(
                decompression,
                out.baseAddress,
                out.count,
                stored.baseAddress,
                stored.count
            )
            initialized = ZSTD_isError(written) == 0 && written == Int(plainBytes) ? written : 0
        }
        guard ZSTD_isError(written) == 0, written == Int(plainBytes) else {
            let why = ZSTD_isError(written) != 0 ? String(cString: ZSTD_getErrorName(written)) : "\(written) bytes"
            return .failure(Damage(message: "its compressed payload does not decompress (\(why))"))
        }
        return .success(plain)
    }

    struct Damage: Error {
        let message: String
    }
}
