extension String {
    /// The text a C function wrote into `buffer`, up to its first NUL (all
    /// of it without one); invalid UTF-8 is repaired, never trapped on.
    ///
    ///     var buffer = [CChar](repeating: 0, count: 256)
    ///     gethostname(&buffer, buffer.count)
    ///     let name = String(cBuffer: buffer)
    package init(cBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
