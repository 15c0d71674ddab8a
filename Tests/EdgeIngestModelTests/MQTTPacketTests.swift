import Testing

@testable import EdgeIngestModel

/// The MQTT input's packet framing and decoding (what a broker sends a
/// subscriber), and the packets it writes, byte for byte against MQTT 5
/// and 3.1.1.
@Suite struct MQTTPacketTests {
    /// A PUBLISH as a broker writes it.
    static func publish(
        topic: String,
        packetID: UInt16?,
        payload: [UInt8],
        version5: Bool = true,
        properties: [UInt8] = []
    ) -> [UInt8] {
        var body: [UInt8] = []
        MQTTPacketWriter.appendString(topic, to: &body)
        if let packetID { MQTTPacketWriter.appendUInt16(packetID, to: &body) }
        if version5 {
            MQTTPacketWriter.appendVariableInteger(properties.count, to: &body)
            body += properties
        }
        body += payload
        return MQTTPacketWriter.packet(packetID == nil ? 0x30 : 0x32, body)
    }

    /// Every packet `reader` gives for `bytes` fed in chunks of `chunk`, decoded.
    static func decodeAll(
        _ bytes: [UInt8],
        chunk: Int,
        maxBody: Int = 1 << 20,
        version5: Bool = true
    ) throws
        -> [(MQTTPacket, [UInt8])]
    {
        var reader = MQTTPacketReader(maxBodyBytes: maxBody, keptPrefixBytes: 64)
        var out: [(MQTTPacket, [UInt8])] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + chunk)
            bytes[start..<end].withUnsafeBytes { reader.append($0) }
            start = end
            while let frame = try reader.next() {
                let decoded = try reader.withBody(of: frame) { body throws(MQTTProtocolError) in
                    (try MQTTPacket.decode(first: frame.first, body: body, version5: version5), Array(body))
                }
                out.append(decoded)
            }
        }
        #expect(reader.bufferedBytes == 0)
        return out
    }

    @Test func packetsAreFramedWhateverTheChunking() throws {
        let payload = Array(#"{"deviceId":"WX1","temperatureInFahrenheit":70.5}"#.utf8)
        var stream: [UInt8] = [0x20, 3, 1, 0, 0]  // CONNACK v5: session present, success, no properties
        stream += Self.publish(topic: "sensors/a", packetID: 7, payload: payload)
        stream += Self.publish(topic: "sensors/b", packetID: nil, payload: Array(repeating: 0x41, count: 300))
        stream += [0xD0, 0]  // PINGRESP
        for chunk in [1, 2, 3, 7, 64, 1000] {
            let packets = try Self.decodeAll(stream, chunk: chunk)
            #expect(packets.count == 4, "chunk \(chunk)")
            guard packets.count == 4 else { continue }
            #expect(
                packets[0].0
                    == .connack(MQTTConnectAcknowledgement(sessionPresent: true, reasonCode: 0))
            )
            guard case .publish(let first) = packets[1].0, case .publish(let second) = packets[2].0 else {
                Issue.record("not two PUBLISHes: \(packets.map(\.0))")
                continue
            }
            #expect(first.topic == "sensors/a" && first.qos == 1 && first.packetID == 7)
            #expect(Array(packets[1].1[first.payloadStart...]) == payload)
            #expect(second.topic == "sensors/b" && second.qos == 0 && second.packetID == nil)
            #expect(packets[2].1.count - second.payloadStart == 300)
            #expect(packets[3].0 == .pingresp)
        }
    }

    @Test func anOversizedPacketKeepsItsHeadAndTheNextPacketIsIntact() throws {
        let big = Self.publish(topic: "big/one", packetID: 9, payload: Array(repeating: 0x42, count: 5_000))
        let next = Self.publish(topic: "small", packetID: 10, payload: Array("{}".utf8))
        for chunk in [1, 100, 10_000] {
            let packets = try Self.decodeAll(big + next, chunk: chunk, maxBody: 1_000)
            #expect(packets.count == 2, "chunk \(chunk)")
            guard packets.count == 2, case .publish(let cut) = packets[0].0, case .publish(let small) = packets[1].0
            else { continue }
            #expect(cut.topic == "big/one" && cut.packetID == 9, "acknowledgeable though cut")
            #expect(packets[0].1.count == 64, "only the kept prefix")
            #expect(small.topic == "small" && small.packetID == 10)
            #expect(Array(packets[1].1[small.payloadStart...]) == Array("{}".utf8))
        }
    }

    @Test func propertiesAreReadOrSkippedByType() throws {
        // CONNACK v5: reason 0x86 with a reason string, an assigned client id, a user property, receive maximum.
        var properties: [UInt8] = [0x1F]
        MQTTPacketWriter.appendString("bad password", to: &properties)
        properties.append(0x12)
        MQTTPacketWriter.appendString("auto-1", to: &properties)
        properties.append(0x26)
        MQTTPacketWriter.appendString("k", to: &properties)
        MQTTPacketWriter.appendString("v", to: &properties)
        properties += [0x21, 0x00, 0x10, 0x13, 0x00, 0x3C]
        var body: [UInt8] = [0, 0x86]
        MQTTPacketWriter.appendVariableInteger(properties.count, to: &body)
        let packets = try Self.decodeAll(MQTTPacketWriter.packet(0x20, body + properties), chunk: 5)
        var expected = MQTTConnectAcknowledgement(sessionPresent: false, reasonCode: 0x86)
        expected.reasonString = "bad password"
        expected.assignedClientID = "auto-1"
        expected.serverKeepAliveSeconds = 60
        #expect(packets.map(\.0) == [.connack(expected)])

        // A PUBLISH with a user property and a message expiry: skipped, payload found.
        var publishProperties: [UInt8] = [0x26]
        MQTTPacketWriter.appendString("_id", to: &publishProperties)
        MQTTPacketWriter.appendString("65aa", to: &publishProperties)
        publishProperties += [0x02, 0, 0, 0, 30]
        let publish = Self.publish(topic: "t", packetID: 1, payload: [0x7B, 0x7D], properties: publishProperties)
        let decoded = try Self.decodeAll(publish, chunk: 3)
        guard case .publish(let message) = decoded.first?.0 else {
            Issue.record("\(decoded)")
            return
        }
        #expect(Array(decoded[0].1[message.payloadStart...]) == [0x7B, 0x7D])
    }

    @Test func version3PacketsHaveNoProperties() throws {
        let connack: [UInt8] = [0x20, 2, 0, 5]  // not authorized
        let suback: [UInt8] = [0x90, 4, 0, 1, 0x01, 0x80]
        let publish = Self.publish(topic: "a/b", packetID: 3, payload: [0x31], version5: false)
        let packets = try Self.decodeAll(connack + suback + publish, chunk: 2, version5: false)
        #expect(packets.count == 3)
        #expect(packets.first?.0 == .connack(MQTTConnectAcknowledgement(sessionPresent: false, reasonCode: 5)))
        #expect(packets.dropFirst().first?.0 == .suback(packetID: 1, reasonCodes: [0x01, 0x80]))
        if case .publish(let message) = packets.last?.0 {
            #expect(Array(packets[2].1[message.payloadStart...]) == [0x31])
        } else {
            Issue.record("\(packets)")
        }
    }

    @Test func brokenPacketsAreProtocolErrors() {
        let cases: [([UInt8], String)] = [
            ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], "remaining length longer than 4 bytes"),
            ([0x32, 3, 0, 1, 0x61], "shorter than its fields"),  // no packet id
            ([0x32, 5, 0, 1, 0x61, 0, 0], "packet id 0"),
            ([0x36, 5, 0, 1, 0x61, 0, 1], "QoS 3"),
            ([0x30, 7, 0, 1, 0x61, 3, 0x23, 0, 1], "topic alias"),
            ([0x10, 0], "only a client sends"),
            ([0x30, 6, 0, 1, 0x61, 2, 0x05, 0], "unknown property"),
            ([0x30, 4, 0, 2, 0xC3, 0x28], "not UTF-8"),
        ]
        for (bytes, message) in cases {
            #expect {
                _ = try Self.decodeAll(bytes, chunk: 64)
            } throws: { error in
                (error as? MQTTProtocolError)?.message.contains(message) == true
            }
        }
    }

    @Test func connectSubscribeAndAcknowledgementsAreWrittenAsTheSpecifications() {
        // MQTT 5 CONNECT: "MQTT", level 5, flags (user, password, no clean start),
        // keep alive 60, properties (session expiry 3600, receive maximum 100), id, user, password.
        let v5 = MQTTPacketWriter.connect(
            clientID: "edge",
            keepAliveSeconds: 60,
            cleanStart: false,
            sessionExpirySeconds: 3600,
            receiveMaximum: 100,
            username: "u",
            password: Array("p".utf8),
            version5: true
        )
        let expected5: [UInt8] =
            [0x10, 31, 0, 4, 0x4D, 0x51, 0x54, 0x54, 5, 0xC0, 0, 60, 8, 0x11, 0, 0, 0x0E, 0x10, 0x21, 0, 100]
            + [0, 4, 0x65, 0x64, 0x67, 0x65, 0, 1, 0x75, 0, 1, 0x70]
        #expect(v5 == expected5)
        let v3 = MQTTPacketWriter.connect(
            clientID: "edge",
            keepAliveSeconds: 60,
            cleanStart: false,
            sessionExpirySeconds: 3600,
            receiveMaximum: 100,
            username: nil,
            password: nil,
            version5: false
        )
        #expect(v3 == [0x10, 16, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0x00, 0, 60, 0, 4, 0x65, 0x64, 0x67, 0x65])
        // SUBSCRIBE: packet id 1, (v5: no properties), filter, options (QoS 1; v5: retain handling 1).
        #expect(
            MQTTPacketWriter.subscribe(packetID: 1, filters: ["a/#"], qos: 1, version5: true)
                == [0x82, 9, 0, 1, 0, 0, 3, 0x61, 0x2F, 0x23, 0x11]
        )
        #expect(
            MQTTPacketWriter.subscribe(packetID: 1, filters: ["a/#"], qos: 1, version5: false)
                == [0x82, 8, 0, 1, 0, 3, 0x61, 0x2F, 0x23, 0x01]
        )
        #expect(MQTTPacketWriter.puback(0x1234) == [0x40, 2, 0x12, 0x34])
        // Remaining lengths over 127 take more bytes.
        let long = MQTTPacketWriter.packet(0x30, Array(repeating: 0, count: 321))
        #expect(Array(long.prefix(3)) == [0x30, 0xC1, 0x02])
    }

    @Test func topicFiltersMatchAsMQTTSays() {
        let cases: [(String, String, Bool)] = [
            ("sensors/#", "sensors", true),
            ("sensors/#", "sensors/a/b", true),
            ("sensors/+", "sensors/a", true),
            ("sensors/+", "sensors/a/b", false),
            ("sensors/+/t", "sensors//t", true),
            ("#", "$SYS/broker", false),
            ("+/x", "$SYS/x", false),
            ("$SYS/#", "$SYS/broker", true),
            ("a/b", "a/b/c", false),
            ("a/b/c", "a/b", false),
        ]
        for (filter, topic, matches) in cases {
            #expect(MQTTTopicFilter.matches(filter, topic) == matches, "\(filter) \(topic)")
        }
        #expect(MQTTTopicFilter.covers("hum/#", "hum/+/room"))
        #expect(MQTTTopicFilter.covers("hum/#", "hum"))
        #expect(MQTTTopicFilter.covers("hum/+/room", "hum/3/room"))
        #expect(!MQTTTopicFilter.covers("hum/+/room", "hum/#"))
        #expect(!MQTTTopicFilter.covers("hum/+", "hum/+/room"))
        #expect(!MQTTTopicFilter.covers("a/b", "a/+"))
        #expect(
            MQTTTopicFilter.withoutCovered(["wx/#", "hum/+/room", "hum/#", "wx/#", "air/+"]) == [
                "wx/#", "hum/#", "air/+",
            ]
        )
        #expect(!MQTTTopicFilter.covers("#", "$SYS/#"))
        #expect(MQTTTopicFilter.overlap("a/+/c", "a/b/+"))
        #expect(MQTTTopicFilter.overlap("a/#", "a"))
        #expect(!MQTTTopicFilter.overlap("a/+", "a"))
        #expect(!MQTTTopicFilter.overlap("a/b", "a/c"))
        #expect(!MQTTTopicFilter.overlap("#", "$SYS/x"))
        #expect(MQTTTopicFilter.overlap("$SYS/#", "$SYS/+"))
        #expect(MQTTTopicFilter.problem("a/#/b") != nil)
        #expect(MQTTTopicFilter.problem("a/b+") != nil)
        #expect(MQTTTopicFilter.problem("") != nil)
        #expect(MQTTTopicFilter.problem("a/+/#") == nil)
    }

    @Test func theTypePatternNamesTheTypeFromItsLevel() throws {
        let pattern = try MQTTTypePattern("sensors/{type}/#")
        #expect(pattern.filter == "sensors/+/#")
        #expect(pattern.type(in: "sensors/WeatherSensor/WX1") == "WeatherSensor")
        #expect(pattern.type(in: "sensors/WeatherSensor") == "WeatherSensor")
        #expect(pattern.type(in: "other/WeatherSensor/WX1") == nil)
        #expect(pattern.type(in: "sensors//x") == nil, "an empty level names no type")
        #expect(throws: MQTTProtocolError.self) { try MQTTTypePattern("sensors/+/#") }
        #expect(throws: MQTTProtocolError.self) { try MQTTTypePattern("{type}/{type}") }
        #expect(throws: MQTTProtocolError.self) { try MQTTTypePattern("{type}/#/x") }
    }
}
