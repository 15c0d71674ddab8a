import CCrypto

/// Hashing and signing for the HTTP input's logins (libcrypto, already
/// linked by libcurl): SHA-256, HMAC-SHA-256, PBKDF2 and random bytes.
package enum Secrets {
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBytes {
            RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count))
        }
        precondition(ok == 1, "libcrypto has no randomness")
        return bytes
    }

    package static func sha256(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = data.withUnsafeBytes { d in
            digest.withUnsafeMutableBytes {
                edgeingest_sha256(
                    d.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    d.count,
                    $0.baseAddress!.assumingMemoryBound(to: UInt8.self)
                )
            }
        }
        return digest
    }

    package static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                mac.withUnsafeMutableBytes {
                    edgeingest_hmac_sha256(
                        k.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        Int32(k.count),
                        d.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        d.count,
                        $0.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        precondition(ok == 1, "HMAC-SHA-256 failed")
        return mac
    }

    package static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = password.withUnsafeBytes { p in
            salt.withUnsafeBytes { s in
                out.withUnsafeMutableBytes {
                    edgeingest_pbkdf2_sha256(
                        p.baseAddress?.assumingMemoryBound(to: CChar.self),
                        Int32(p.count),
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        Int32(s.count),
                        Int32(iterations),
                        $0.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        32
                    )
                }
            }
        }
        precondition(ok == 1, "PBKDF2 failed")
        return out
    }

    /// Compares in time that depends only on the lengths.
    package static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes from hexadecimal text (either case), or nil.
    package static func bytes(hex text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
