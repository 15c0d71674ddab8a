import Foundation
import Testing

@testable import EdgeIngestModel

@Suite struct ObjectIdTests {
    @Test func textRoundTrip() throws {
        let id = ObjectId.generate()
        #expect(id.hexString.count == 24)
        #expect(id.hexString == id.hexString.lowercased())
        #expect(try ObjectId(string: id.hexString) == id)
        #expect(try ObjectId(string: id.hexString.uppercased()) == id)
    }

    @Test func knownLayoutParses() throws {
        let id = try ObjectId(string: "507f1f77bcf86cd799439011")
        #expect(id.timestampSeconds == 0x507f_1f77)
        #expect(id.description == "507f1f77bcf86cd799439011")
    }

    @Test func layoutIsMongoCompatible() throws {
        let before = UInt32(Date().timeIntervalSince1970)
        let a = ObjectId.generate()
        let b = ObjectId.generate()
        let after = UInt32(Date().timeIntervalSince1970) + 1
        #expect((before...after).contains(a.timestampSeconds))
        // The 5 process-unique bytes are the same for every id of a process.
        let ra = withUnsafeBytes(of: a.bytes) { Array($0) }
        let rb = withUnsafeBytes(of: b.bytes) { Array($0) }
        #expect(ra[4..<9] == rb[4..<9])
    }

    @Test func generatedIdsAreUniqueAndIncreasing() {
        var previous = ObjectId.generate()
        var seen = Set<ObjectId>([previous])
        for _ in 0..<200_000 {
            let next = ObjectId.generate()
            #expect(previous < next)
            seen.insert(next)
            previous = next
        }
        #expect(seen.count == 200_001)
    }

    @Test func generatedIdsAreUniqueAcrossThreads() async {
        let ids = await withTaskGroup(of: [ObjectId].self) { group in
            for _ in 0..<4 { group.addTask { (0..<20_000).map { _ in ObjectId.generate() } } }
            var all: [ObjectId] = []
            for await part in group { all += part }
            return all
        }
        #expect(Set(ids).count == 80_000)
    }

    @Test(arguments: [
        ("", #"An ObjectId must be 24 hexadecimal characters, got ""."#),
        ("507f1f77bcf86cd79943901", #"An ObjectId must be 24 hexadecimal characters, got "507f1f77bcf86cd79943901"."#),
        (
            "507f1f77bcf86cd79943901z",
            #"An ObjectId must be 24 hexadecimal characters, got "507f1f77bcf86cd79943901z"."#
        ),
        (
            "507f1f77bcf86cd799439011507f1f77bcf86cd799439011",
            #"An ObjectId must be 24 hexadecimal characters, got "507f1f77bcf86cd799439011507f1f77…"."#
        ),
    ])
    func invalidTextIsRefusedClearly(text: String, message: String) {
        #expect {
            try ObjectId(string: text)
        } throws: { error in
            let error = error as! EdgeIngestError
            return error.code == .invalidObjectId && error.message == message
        }
    }

    /// Every byte, in every position's place: a hexadecimal digit of
    /// either case parses to its value, anything else refuses the text.
    @Test func everyByteIsReadAsTheDigitItIsOrRefused() {
        for c in UInt8.min...UInt8.max {
            for position in [0, 1, 23] {
                var text = [UInt8](repeating: UInt8(ascii: "0"), count: 24)
                text[position] = c
                let id = text.withUnsafeBytes { ObjectId(hexUTF8: $0) }
                guard let value = hexDigitValue(c) else {
                    #expect(id == nil, "byte \(c) at \(position)")
                    continue
                }
                let byte = id.map { id in withUnsafeBytes(of: id.bytes) { $0[position / 2] } }
                #expect(byte == (position % 2 == 0 ? value << 4 : value), "byte \(c) at \(position)")
            }
        }
    }

    @Test func zeroIdIsZero() {
        #expect(ObjectId().isZero)
        #expect(ObjectId().hexString == "000000000000000000000000")
        #expect(!ObjectId.generate().isZero)
    }
}
