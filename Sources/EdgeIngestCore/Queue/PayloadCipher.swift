import CCrypto

/// Encrypts record payloads at rest with AES-256-GCM (OpenSSL's libcrypto),
/// for queues opened with an encryption key. docs/QUEUE.md ("Encryption at
/// rest") states what is protected and what is not.
///
/// Of the 64-byte key (as the seeds' `encryptionKey`), bytes 0..<32 are the
/// AES-256 key. The file stores a key check — the first 8 bytes of SHA-256
/// over the whole key and a label — so a wrong key is refused before
/// anything is read or written (64 random bytes cannot be recovered from it). Each sealed
/// payload is `nonce (12 random bytes) ‖ ciphertext ‖ tag (16)`.
struct PayloadCipher: Sendable {
    static let keyLength = 64
    private let key: [UInt8]
    /// Stored in the queue's meta table; compared at open.
    let keyCheck: Int64

    init(key: [UInt8], queueName: String) throws {
        guard key.count == PayloadCipher.keyLength else {
            throw EdgeIngestError(
                .encryption,
                "The encryption key for \(queueName) is \(key.count) bytes; it must be exactly 64 (for example: head -c 64 /dev/urandom > key)."
            )
        }
        self.key = Array(key[0..<32])
        var material = key
        material += Array("EdgeIngest queue key check v1".utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        guard edgeingest_sha256(material, material.count, &digest) == 1 else {
            throw EdgeIngestError(.encryption, "libcrypto could not compute the key check for \(queueName).")
        }
        keyCheck = digest[0..<8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    static let overhead = 12 + 16

    func seal(_ plain: UnsafeRawBufferPointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plain.count + PayloadCipher.overhead)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            let base = buffer.baseAddress!
            guard RAND_bytes(base, 12) == 1 else { return false }
            return edgeingest_aes256gcm_seal(
                key,
                base,
                plain.baseAddress?.assumingMemoryBound(to: UInt8.self),
                Int32(plain.count),
                base + 12,
                base + 12 + plain.count
            ) == 1
        }
        guard ok else { throw EdgeIngestError(.encryption, "libcrypto failed to encrypt a payload.") }
        return out
    }

    func open(_ sealed: UnsafeRawBufferPointer, what: String) throws -> [UInt8] {
        guard sealed.count >= PayloadCipher.overhead, let base = sealed.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else {
            throw EdgeIngestError(
                .queueCorrupt,
                "\(what) is too short to be an encrypted payload: the file is damaged."
            )
        }
        let length = sealed.count - PayloadCipher.overhead
        var plain = [UInt8](repeating: 0, count: length)
        let ok = plain.withUnsafeMutableBufferPointer {
            edgeingest_aes256gcm_open(key, base, base + 12, Int32(length), base + 12 + length, $0.baseAddress) == 1
        }
        guard ok else {
            throw EdgeIngestError(
                .queueCorrupt,
                "\(what) does not decrypt with the key (its authentication tag does not match): the file is damaged."
            )
        }
        return plain
    }
}
