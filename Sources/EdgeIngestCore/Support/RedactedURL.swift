/// `url` with every password in it replaced by `***`, for logs, errors and
/// `check-config`: the `user:password@` of a URI; a `password`, `sslpassword`
/// or (in a query) `p` parameter of a URI's query or of a libpq key/value
/// string (spaces around `=` and a quoted value allowed).
///
///     redactedURL("http://ingest:s3cret@ch:8123/")              // http://ingest:***@ch:8123/
///     redactedURL("http://influx:8086/write?db=t&u=me&p=s3cret") // …&u=me&p=***
///     redactedURL("host=db password = 's3 cret' dbname=t")       // host=db password = *** dbname=t
///
/// An unquoted value runs to the next key (a word followed by `=`), so a
/// password typed with a space (`password=my secret`, or libpq's `\ `) is
/// hidden whole. A key written percent-encoded (`pass%77ord=`) is not
/// recognised.
package func redactedURL(_ url: String) -> String {
    var text = Substring(url)
    if let scheme = text.firstRange(of: "://") {
        let authorityEnd = text[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? text.endIndex
        if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
            let colon = text[scheme.upperBound..<at].firstIndex(of: ":")
        {
            text.replaceSubrange(text.index(after: colon)..<at, with: "***")
        }
    }
    let separators: Set<Character> = [" ", "\t", "\n", "?", "&"]
    var out = ""
    var rest = text[...]
    var i = rest.startIndex
    while i < rest.endIndex {
        // At the start of a key: the beginning or just after a separator.
        let atKey = i == rest.startIndex || separators.contains(rest[rest.index(before: i)])
        let key = rest[i...].prefix { $0.isLetter }
        let isSecret =
            key == "password" || key == "sslpassword"
            || (key == "p" && i > rest.startIndex && "?&".contains(rest[rest.index(before: i)]))
        guard atKey, isSecret else {
            i = rest.index(after: i)
            continue
        }
        var valueStart = rest[key.endIndex...].drop { $0 == " " || $0 == "\t" }
        guard valueStart.first == "=" else {
            i = key.endIndex
            continue
        }
        valueStart = valueStart.dropFirst().drop { $0 == " " || $0 == "\t" }
        var end = valueStart.startIndex
        if valueStart.first == "'" {
            // 'quoted value' with \' escapes
            end = valueStart.index(after: end)
            while end < valueStart.endIndex, valueStart[end] != "'" {
                end =
                    valueStart.index(end, offsetBy: valueStart[end] == "\\" ? 2 : 1, limitedBy: valueStart.endIndex)
                    ?? valueStart.endIndex
            }
            end = end < valueStart.endIndex ? valueStart.index(after: end) : end
        } else {
            end = unquotedValueEnd(valueStart)
        }
        out += rest[..<valueStart.startIndex] + "***"
        rest = rest[end...]
        i = rest.startIndex
    }
    return out + rest
}

/// Where an unquoted value that starts `value` ends: at `&` or `?` (a URI's
/// query), or before the whitespace that precedes the next `key=` or
/// `key =` of a libpq key/value string.
private func unquotedValueEnd(_ value: Substring) -> Substring.Index {
    let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" }
    var end = value.startIndex
    while end < value.endIndex {
        let c = value[end]
        if c == "&" || c == "?" { break }
        if c == "\\" {
            end = value.index(end, offsetBy: 2, limitedBy: value.endIndex) ?? value.endIndex
            continue
        }
        if blank(c) {
            let next = value[end...].drop(while: blank)
            let word = next.prefix { !blank($0) }
            if next.isEmpty || word.contains("=") || next[word.endIndex...].drop(while: blank).first == "=" { break }
        }
        end = value.index(after: end)
    }
    return end
}
