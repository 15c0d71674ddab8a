import CCrypto

/// A NATS NKey seed (`SU…`, a user's Ed25519 private key in NATS's base32
/// form with a CRC-16), and the signature of a server's nonce made with it:
/// how a client proves its identity without sending a secret
/// (docs.nats.io, "NKeys").
///
/// ```swift
/// let key = try NATSNKey(seed: "SUAM…")
/// let (signature, publicKey) = try key.sign(Array(nonce.utf8))
/// ```
package struct NATSNKey: Sendable {
    /// Whose key it is: the agent logs in with a user's; tests make the
    /// operator and account keys that sign a user's JWT.
    package enum Kind: UInt8, Sendable {
        case user = 160  // 20 << 3: "U…"
        case account = 0  // "A…"
        case `operator` = 112  // 14 << 3: "O…"
    }

    /// The 32 bytes of the Ed25519 seed.
    let seed: [UInt8]
    package let kind: Kind

    /// NKeys' prefix bytes: a seed, and the public key of a user.
    static let seedPrefix: UInt8 = 18 << 3
    static let userPrefix: UInt8 = Kind.user.rawValue

    /// Reads a user seed; the error says what is wrong without the seed itself.
    package init(seed text: String) throws(JetStreamError) {
        guard let raw = Base32.decode(text.trimmingSpaces), raw.count == 36 else {
            throw JetStreamError(
                .configuration,
                "the NKey seed is not a NATS seed (58 base32 characters starting with SU)"
            )
        }
        let crc = UInt16(raw[34]) | UInt16(raw[35]) << 8
        guard CRC16.xmodem(raw[0..<34]) == crc else {
            throw JetStreamError(.configuration, "the NKey seed's checksum does not match: it was cut or mistyped")
        }
        let publicPrefix = (raw[0] & 7) << 5 | (raw[1] & 248) >> 3
        guard raw[0] & 248 == Self.seedPrefix, publicPrefix == Self.userPrefix else {
            throw JetStreamError(.configuration, "the NKey seed is not a user's seed (it should start with SU)")
        }
        seed = Array(raw[2..<34])
        self.kind = .user
    }

    /// A key from its 32 raw seed bytes (tests make keys this way).
    package init(rawSeed: [UInt8], kind: Kind = .user) {
        seed = rawSeed
        self.kind = kind
    }

    /// The seed in NATS's text form (`SU…` for a user).
    package var seedText: String {
        let b1 = Self.seedPrefix | kind.rawValue >> 5
        let b2 = (kind.rawValue & 31) << 3
        return Self.encode([b1, b2] + seed)
    }

    /// The public key in NATS's text form (`U…` for a user), as a server's config names it.
    package func publicKey() throws(JetStreamError) -> String {
        try Self.encode([kind.rawValue] + sign([]).publicKey)
    }

    /// The signature of `message` (base64url without padding, as CONNECT's
    /// `sig` takes it) and the raw public key.
    package func sign(_ message: [UInt8]) throws(JetStreamError) -> (signature: String, publicKey: [UInt8]) {
        var signature = [UInt8](repeating: 0, count: 64)
        var publicKey = [UInt8](repeating: 0, count: 32)
        let ok = edgeingest_ed25519_sign(seed, message, message.count, &signature, &publicKey)
        guard ok == 1 else {
            throw JetStreamError(.configuration, "the NKey seed could not sign (OpenSSL without Ed25519?)")
        }
        return (Base64URL.encode(signature), publicKey)
    }

    private static func encode(_ bytes: [UInt8]) -> String {
        let crc = CRC16.xmodem(bytes[...])
        return Base32.encode(bytes + [UInt8(crc & 0xFF), UInt8(crc >> 8)])
    }
}

/// RFC 4648 base32 without padding, as NKeys write it.
enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(5 - bits) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for char in text.utf8 {
            guard let value = alphabet.firstIndex(of: char) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(buffer >> UInt32(bits) & 0xFF))
            }
        }
        return out
    }
}

/// Base64 with the URL alphabet and no padding.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var chunk = UInt32(bytes[i]) << 16
            if n > 1 { chunk |= UInt32(bytes[i + 1]) << 8 }
            if n > 2 { chunk |= UInt32(bytes[i + 2]) }
            for k in 0...n { out.append(alphabet[Int(chunk >> UInt32(18 - 6 * k) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// CRC-16/XMODEM (polynomial 0x1021), NKeys' checksum.
enum CRC16 {
    static func xmodem(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line ends.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
