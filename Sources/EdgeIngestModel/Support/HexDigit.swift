/// The value of one ASCII hex digit (either case), or nil: what ObjectId's
/// hex text and JSON's `\\u` escapes are read with.
@inline(__always)
package func hexDigitValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
    default: return nil
    }
}
