/// The MQTT control packets a subscribing client receives (MQTT 5 and
/// 3.1.1), decoded from one whole packet (``MQTTPacketReader`` frames them).
/// Only what the MQTT input acts on is kept; other properties are checked
/// for shape and skipped.
package enum MQTTPacket: Equatable, Sendable {
    case connack(MQTTConnectAcknowledgement)
    case suback(packetID: UInt16, reasonCodes: [UInt8])
    /// `payload` is the range of the packet's bytes holding the payload.
    case publish(MQTTPublish)
    case pingresp
    /// A broker's DISCONNECT (MQTT 5 only): why it closes the connection.
    case disconnect(reasonCode: UInt8, reason: String?)
    /// Acknowledgements a subscriber does not expect (it publishes nothing): ignored.
    case other(type: UInt8)
}

/// CONNACK: whether the broker kept the session, its answer, and the limits it sets.
package struct MQTTConnectAcknowledgement: Equatable, Sendable {
    package var sessionPresent: Bool
    /// 0 accepted; MQTT 5 reason codes (0x80 and up) or 3.1.1 return codes (1–5).
    package var reasonCode: UInt8
    package var reasonString: String?
    package var assignedClientID: String?
    package var serverKeepAliveSeconds: UInt16?
    package var sessionExpirySeconds: UInt32?
}

/// One received PUBLISH: where the topic and payload are in the packet.
package struct MQTTPublish: Equatable, Sendable {
    package var topic: String
    package var qos: UInt8
    package var duplicate: Bool
    package var retained: Bool
    /// Present for QoS 1 and 2.
    package var packetID: UInt16?
    /// Where the payload starts in the packet's body (after the fixed header).
    package var payloadStart: Int
}

/// A packet that breaks the protocol: the connection must be closed.
package struct MQTTProtocolError: Error, Equatable, Sendable {
    package let message: String
    package init(_ message: String) { self.message = message }
}

extension MQTTPacket {
    /// Decodes a packet from its first byte and its body (the bytes after
    /// the remaining-length field). A body cut short (an oversized PUBLISH
    /// kept only in part) decodes as far as its topic and packet id.
    package static func decode(
        first: UInt8,
        body: UnsafeRawBufferPointer,
        version5: Bool
    ) throws(MQTTProtocolError) -> MQTTPacket {
        var reader = MQTTFieldReader(body)
        switch first >> 4 {
        case 2:  // CONNACK
            let flags = try reader.byte()
            let code = try reader.byte()
            var ack = MQTTConnectAcknowledgement(sessionPresent: flags & 1 == 1, reasonCode: code)
            if version5, reader.remaining > 0 {
                try reader.properties { id, reader throws(MQTTProtocolError) in
                    switch id {
                    case 0x1F: ack.reasonString = try reader.string()
                    case 0x12: ack.assignedClientID = try reader.string()
                    case 0x13: ack.serverKeepAliveSeconds = try reader.uint16()
                    case 0x11: ack.sessionExpirySeconds = try reader.uint32()
                    default: try reader.skipProperty(id)
                    }
                }
            }
            return .connack(ack)
        case 3:  // PUBLISH
            let qos = (first >> 1) & 3
            guard qos < 3 else { throw MQTTProtocolError("a PUBLISH with QoS 3") }
            let topic = try reader.string()
            let packetID = qos > 0 ? try reader.uint16() : nil
            if packetID == 0 { throw MQTTProtocolError("a PUBLISH with packet id 0") }
            if version5 {
                try reader.properties { id, reader throws(MQTTProtocolError) in
                    if id == 0x23 { throw MQTTProtocolError("a topic alias, which this client did not allow") }
                    try reader.skipProperty(id)
                }
            }
            return .publish(
                MQTTPublish(
                    topic: topic,
                    qos: qos,
                    duplicate: first & 0x08 != 0,
                    retained: first & 1 != 0,
                    packetID: packetID,
                    payloadStart: reader.offset
                )
            )
        case 9:  // SUBACK
            let packetID = try reader.uint16()
            if version5 {
                try reader.properties { id, reader throws(MQTTProtocolError) in try reader.skipProperty(id) }
            }
            var codes: [UInt8] = []
            while reader.remaining > 0 { codes.append(try reader.byte()) }
            return .suback(packetID: packetID, reasonCodes: codes)
        case 13:
            return .pingresp
        case 14:  // DISCONNECT
            guard version5, reader.remaining > 0 else { return .disconnect(reasonCode: 0, reason: nil) }
            let code = try reader.byte()
            var reason: String?
            if reader.remaining > 0 {
                try reader.properties { id, reader throws(MQTTProtocolError) in
                    if id == 0x1F { reason = try reader.string() } else { try reader.skipProperty(id) }
                }
            }
            return .disconnect(reasonCode: code, reason: reason)
        case 1, 8, 10, 12:
            throw MQTTProtocolError("a packet only a client sends (type \(first >> 4))")
        case 0:
            throw MQTTProtocolError("packet type 0, which is reserved")
        default:
            return .other(type: first >> 4)
        }
    }
}

/// Reads MQTT's fields (big-endian integers, length-prefixed strings,
/// variable byte integers, properties) from a packet body, never past it.
package struct MQTTFieldReader {
    let bytes: UnsafeRawBufferPointer
    package private(set) var offset = 0

    package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    package var remaining: Int { bytes.count - offset }

    mutating func need(_ n: Int) throws(MQTTProtocolError) {
        guard n <= remaining else { throw MQTTProtocolError("a packet shorter than its fields") }
    }

    package mutating func byte() throws(MQTTProtocolError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func uint16() throws(MQTTProtocolError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    package mutating func uint32() throws(MQTTProtocolError) -> UInt32 {
        try need(4)
        var value: UInt32 = 0
        for i in 0..<4 { value = value << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return value
    }

    package mutating func variableInteger() throws(MQTTProtocolError) -> Int {
        var value = 0
        for shift in stride(from: 0, to: 28, by: 7) {
            let b = try byte()
            value |= Int(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
        }
        throw MQTTProtocolError("a variable byte integer longer than 4 bytes")
    }

    package mutating func binary() throws(MQTTProtocolError) -> UnsafeRawBufferPointer {
        let length = Int(try uint16())
        try need(length)
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
    }

    package mutating func string() throws(MQTTProtocolError) -> String {
        let raw = try binary()
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw MQTTProtocolError("a string that is not UTF-8")
        }
        return text
    }

    /// Reads a property list (its length, then each property), handing
    /// each identifier to `body`, which reads or skips its value.
    mutating func properties(
        _ body: (UInt8, inout MQTTFieldReader) throws(MQTTProtocolError) -> Void
    ) throws(MQTTProtocolError) {
        let length = try variableInteger()
        try need(length)
        let end = offset + length
        var inner = MQTTFieldReader(UnsafeRawBufferPointer(rebasing: bytes[..<end]))
        inner.offset = offset
        while inner.offset < end {
            let id = try inner.byte()
            try body(id, &inner)
        }
        offset = end
    }

    /// Skips one property's value by the type MQTT 5 gives its identifier.
    mutating func skipProperty(_ id: UInt8) throws(MQTTProtocolError) {
        switch id {
        case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A:
            try need(1)
            offset += 1
        case 0x13, 0x21, 0x22, 0x23:
            try need(2)
            offset += 2
        case 0x02, 0x11, 0x18, 0x27:
            try need(4)
            offset += 4
        case 0x0B: _ = try variableInteger()
        case 0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F, 0x09, 0x16: _ = try binary()
        case 0x26:
            _ = try binary()
            _ = try binary()
        default: throw MQTTProtocolError("an unknown property 0x\(String(id, radix: 16))")
        }
    }
}
