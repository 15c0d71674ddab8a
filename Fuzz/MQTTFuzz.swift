// libFuzzer target: the MQTT input's packet framing and decoding
// (MQTTPacketReader, MQTTPacket.decode) on any byte stream a broker — or
// something posing as one — could send. Built and run by scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps, overflows or leaks, as MQTT 5 and as 3.1.1;
// - framing does not depend on how the stream is cut into reads: fed whole,
//   byte by byte and in chunks of 7, the same frames come out (first byte,
//   declared length, kept bytes) and the same error, if any;
// - memory stays bounded: the reader never holds more than its limit plus
//   one read, and an oversized packet keeps only its prefix;
// - a decoded PUBLISH written again (topic, packet id, payload; no
//   properties) decodes to the same topic, QoS, packet id and payload.

@testable import EdgeIngestModel

let maxBody = 512
let keptPrefix = 64

struct Cut: Equatable {
    var first: UInt8
    var length: Int
    var kept: [UInt8]
}

/// The frames of `stream` read in chunks of `chunk` bytes, and the error that stopped them, if any.
func frames(_ stream: UnsafeRawBufferPointer, chunk: Int) -> ([Cut], String?) {
    var reader = MQTTPacketReader(maxBodyBytes: maxBody, keptPrefixBytes: keptPrefix)
    var cuts: [Cut] = []
    var start = 0
    while start < stream.count {
        let end = min(stream.count, start + chunk)
        reader.append(UnsafeRawBufferPointer(rebasing: stream[start..<end]))
        start = end
        precondition(reader.bufferedBytes <= maxBody + 5 + chunk, "the reader holds \(reader.bufferedBytes) bytes")
        do {
            while let frame = try reader.next() {
                precondition(frame.body.count == min(frame.length, frame.length <= maxBody ? frame.length : keptPrefix))
                cuts.append(
                    Cut(first: frame.first, length: frame.length, kept: reader.withBody(of: frame) { Array($0) })
                )
            }
        } catch {
            return (cuts, error.message)
        }
    }
    return (cuts, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let stream = UnsafeRawBufferPointer(start: data, count: size)
    let whole = frames(stream, chunk: max(1, size))
    let bytewise = frames(stream, chunk: 1)
    let sevens = frames(stream, chunk: 7)
    precondition(whole.0 == bytewise.0 && whole.0 == sevens.0, "framing depends on the reads")
    precondition(whole.1 == bytewise.1 && whole.1 == sevens.1, "errors depend on the reads")
    for cut in whole.0 {
        for version5 in [true, false] {
            let packet = cut.kept.withUnsafeBytes {
                try? MQTTPacket.decode(first: cut.first, body: $0, version5: version5)
            }
            guard case .publish(let message) = packet, cut.kept.count == cut.length else { continue }
            precondition(message.payloadStart <= cut.kept.count)
            let payload = Array(cut.kept[message.payloadStart...])
            var body: [UInt8] = []
            MQTTPacketWriter.appendString(message.topic, to: &body)
            if let id = message.packetID { MQTTPacketWriter.appendUInt16(id, to: &body) }
            if version5 { body.append(0) }
            body += payload
            let again = body.withUnsafeBytes {
                try? MQTTPacket.decode(first: 0x30 | message.qos << 1, body: $0, version5: version5)
            }
            guard case .publish(let second) = again else {
                preconditionFailure("a PUBLISH written again does not decode")
            }
            precondition(
                second.topic == message.topic && second.qos == message.qos && second.packetID == message.packetID
            )
            precondition(Array(body[second.payloadStart...]) == payload, "the payload moved")
        }
    }
    return 0
}
