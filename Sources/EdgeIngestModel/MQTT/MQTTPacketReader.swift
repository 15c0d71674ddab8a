/// Cuts a byte stream from a broker into MQTT packets, in bounded memory:
/// a packet whose body is larger than ``maxBodyBytes`` is not buffered
/// whole; its first ``keptPrefixBytes`` are kept (enough for a PUBLISH's
/// topic and packet id, so it can be acknowledged and reported) and the
/// rest is dropped as it arrives.
///
///     var reader = MQTTPacketReader(maxBodyBytes: 1 << 20)
///     reader.append(chunk)
///     while let frame = try reader.next() {
///         let packet = try reader.withBody(of: frame) { try MQTTPacket.decode(first: frame.first, body: $0, version5: true) }
///     }
package struct MQTTPacketReader {
    /// One packet: its first byte, where its (kept) body is, and its declared length.
    package struct Frame: Equatable, Sendable {
        package var first: UInt8
        package var body: Range<Int>
        /// The body's length as the packet declared it.
        package var length: Int
        /// Whether only a prefix of the body was kept (the packet was over the limit).
        package var truncated: Bool { body.count < length }
    }

    package let maxBodyBytes: Int
    package let keptPrefixBytes: Int
    private var buffer: [UInt8] = []
    /// Where the unread bytes start in `buffer`.
    private var position = 0
    /// Bytes of an oversized packet still to be dropped from what arrives next.
    private var discard = 0

    package init(maxBodyBytes: Int, keptPrefixBytes: Int = 70_000) {
        self.maxBodyBytes = maxBodyBytes
        self.keptPrefixBytes = min(keptPrefixBytes, maxBodyBytes)
    }

    /// Bytes held now (bounded by ``maxBodyBytes`` plus one appended chunk).
    package var bufferedBytes: Int { buffer.count - position }

    /// Adds bytes read from the connection. Frames returned earlier are invalid afterwards.
    package mutating func append(_ chunk: UnsafeRawBufferPointer) {
        var chunk = chunk
        if discard > 0 {
            let n = min(discard, chunk.count)
            discard -= n
            chunk = UnsafeRawBufferPointer(rebasing: chunk[n...])
        }
        if position == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            position = 0
        } else if position >= 64 * 1024 {
            buffer.removeFirst(position)
            position = 0
        }
        buffer.append(contentsOf: chunk)
    }

    /// The next whole packet (or an oversized one's kept prefix), or nil
    /// until more bytes arrive.
    package mutating func next() throws(MQTTProtocolError) -> Frame? {
        let available = buffer.count - position
        guard available >= 2 else { return nil }
        var length = 0
        var headerBytes = 1
        while true {
            guard headerBytes < available else { return nil }
            let b = buffer[position + headerBytes]
            length |= Int(b & 0x7F) << (7 * (headerBytes - 1))
            headerBytes += 1
            if b & 0x80 == 0 { break }
            guard headerBytes < 5 else { throw MQTTProtocolError("a remaining length longer than 4 bytes") }
        }
        let first = buffer[position]
        let kept = length <= maxBodyBytes ? length : keptPrefixBytes
        guard available >= headerBytes + kept else { return nil }
        let start = position + headerBytes
        let frame = Frame(first: first, body: start..<start + kept, length: length)
        let droppable = min(available - headerBytes - kept, length - kept)
        discard = length - kept - droppable
        position = start + kept + droppable
        return frame
    }

    /// The frame's kept body bytes, valid inside `body`.
    package func withBody<R, E: Error>(
        of frame: Frame,
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let result: Result<R, E> = buffer.withUnsafeBytes { bytes in
            do throws(E) {
                return .success(try body(UnsafeRawBufferPointer(rebasing: bytes[frame.body])))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// The packets a subscribing client sends, encoded.
package enum MQTTPacketWriter {
    /// CONNECT. `version5` false writes MQTT 3.1.1 (no properties; `cleanStart` is "clean session").
    package static func connect(
        clientID: String,
        keepAliveSeconds: UInt16,
        cleanStart: Bool,
        sessionExpirySeconds: UInt32?,
        receiveMaximum: UInt16?,
        username: String?,
        password: [UInt8]?,
        version5: Bool
    ) -> [UInt8] {
        var body: [UInt8] = []
        appendString("MQTT", to: &body)
        body.append(version5 ? 5 : 4)
        var flags: UInt8 = cleanStart ? 0x02 : 0
        if username != nil { flags |= 0x80 }
        if password != nil { flags |= 0x40 }
        body.append(flags)
        appendUInt16(keepAliveSeconds, to: &body)
        if version5 {
            var properties: [UInt8] = []
            if let sessionExpirySeconds {
                properties.append(0x11)
                appendUInt32(sessionExpirySeconds, to: &properties)
            }
            if let receiveMaximum {
                properties.append(0x21)
                appendUInt16(receiveMaximum, to: &properties)
            }
            appendVariableInteger(properties.count, to: &body)
            body += properties
        }
        appendString(clientID, to: &body)
        if let username { appendString(username, to: &body) }
        if let password { appendBinary(password, to: &body) }
        return packet(0x10, body)
    }

    /// SUBSCRIBE to `filters` at `qos`. With MQTT 5, retained messages are
    /// sent only when the subscription is new (retain handling 1), so a
    /// reconnect does not receive them again.
    package static func subscribe(packetID: UInt16, filters: [String], qos: UInt8, version5: Bool) -> [UInt8] {
        var body: [UInt8] = []
        appendUInt16(packetID, to: &body)
        if version5 { body.append(0) }  // no properties
        for filter in filters {
            appendString(filter, to: &body)
            body.append(version5 ? qos | 0x10 : qos)
        }
        return packet(0x82, body)
    }

    /// PUBACK for a QoS 1 message (success; the same bytes in both versions).
    package static func puback(_ packetID: UInt16) -> [UInt8] {
        [0x40, 2, UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
    }

    package static let pingreq: [UInt8] = [0xC0, 0]
    /// DISCONNECT, normal: with MQTT 5 the session is kept for its expiry interval.
    package static let disconnect: [UInt8] = [0xE0, 0]

    static func packet(_ first: UInt8, _ body: [UInt8]) -> [UInt8] {
        var out = [first]
        appendVariableInteger(body.count, to: &out)
        return out + body
    }

    static func appendVariableInteger(_ value: Int, to out: inout [UInt8]) {
        var value = value
        repeat {
            var b = UInt8(value & 0x7F)
            value >>= 7
            if value > 0 { b |= 0x80 }
            out.append(b)
        } while value > 0
    }

    static func appendUInt16(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(value >> 8))
        out.append(UInt8(value & 0xFF))
    }

    static func appendUInt32(_ value: UInt32, to out: inout [UInt8]) {
        for shift in [24, 16, 8, 0] { out.append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }

    static func appendBinary(_ bytes: [UInt8], to out: inout [UInt8]) {
        appendUInt16(UInt16(min(bytes.count, 65535)), to: &out)
        out += bytes.prefix(65535)
    }

    static func appendString(_ text: String, to out: inout [UInt8]) { appendBinary(Array(text.utf8), to: &out) }
}
