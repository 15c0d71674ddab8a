#if canImport(Glibc)
import Glibc
#endif

/// Turns a parsed line into a ``Record`` of the right type: the reading's
/// own `_type`, else the input's configured type.
package struct ReadingRouter: Sendable {
    let typesByName: [String: RecordType]
    /// The declared type names, sorted, for refusals (made once, not per refused line).
    private let declaredNames: String
    let defaultType: RecordType?
    let inputName: String
    /// Readings without `_id` are rejected (records received from another
    /// client: a generated id would defeat deduplication of re-sends).
    package var requireID = false
    /// Whether lines that are already their record's JSON are appended as
    /// read (see ``appendAsRead(_:type:requireID:into:)``); false only in
    /// tests comparing that path with the general one.
    package var storesAsRead = true
    /// The as-read path's list of values to write again, kept from line to line.
    private var asReadRewrites: [AsReadRewrite] = []
    /// The writer's-form path's list of values to write again, kept from line to line.
    var writersFormRewrites: [AsReadRewrite] = []
    /// A default type name that is not declared, and where it came from
    /// (e.g. "the batch's EdgeIngest-Record-Type"): readings without their
    /// own `_type` are rejected as `unknown_type`, naming it.
    private let undeclaredDefault: (name: String, origin: String)?

    /// - Parameter defaultTypeOrigin: what named `defaultType`, for the
    ///   message when it is not declared.
    package init(
        types: [RecordType],
        defaultType: String?,
        inputName: String,
        defaultTypeOrigin: String = "the input's type"
    ) {
        typesByName = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
        declaredNames = types.map(\.name).sorted().joined(separator: ", ")
        let declared = defaultType.flatMap { name in types.first { $0.name == name } }
        self.defaultType = declared
        self.inputName = inputName
        undeclaredDefault = declared == nil ? defaultType.map { ($0, defaultTypeOrigin) } : nil
    }

    /// Whether the field's key is `key` (a static string: no lazy global
    /// and no array per comparison on the hot path).
    private static func isKey(_ key: StaticString, _ field: ParsedLine.Field, in line: ParsedLine) -> Bool {
        field.keyCount == key.utf8CodeUnitCount
            && line.withKey(field) { memcmp($0.baseAddress!, key.utf8Start, field.keyCount) == 0 }
    }

    /// The builder of the last routed reading's type, kept for the next
    /// one (its storage is reused: no allocation per reading).
    private var spareBuilder: RecordBuilder?

    /// Validates a parsed line and returns it as a ``Record``.
    package func route(_ line: ParsedLine) throws(LineRejection) -> Record {
        var builder = RecordBuilder(type: try recordType(of: line))
        do {
            try ReadingRouter.fill(&builder, from: line, verbatim: false, requireID: requireID)
            return try builder.finish()
        } catch {
            throw ReadingRouter.rejection(for: error)
        }
    }

    /// Validates a parsed line and appends it, encoded, to `batch`.
    /// Returns whether the reading carried its own `_id` (else one was generated).
    @discardableResult
    package mutating func route(_ line: ParsedLine, into batch: inout EncodedBatch) throws(LineRejection) -> Bool {
        let type = try recordType(of: line)
        if storesAsRead,
            let ownID = ReadingRouter.appendAsRead(
                line,
                type: type,
                requireID: requireID,
                rewrites: &asReadRewrites,
                into: &batch
            )
        {
            return ownID
        }
        if spareBuilder?.type != type { spareBuilder = RecordBuilder(type: type) }
        // Mutated in place through `!` (`fill` is static: an instance method
        // taking a stored property inout makes Swift copy `self`, and the
        // builder's arrays were then copied on every write).
        do {
            try ReadingRouter.fill(&spareBuilder!, from: line, verbatim: true, requireID: requireID)
            let ownID = spareBuilder!.hasID
            try spareBuilder!.finish(into: &batch)
            return ownID
        } catch {
            spareBuilder!.reset()
            throw ReadingRouter.rejection(for: error)
        }
    }

    /// The reading's own `_type`, else the input's type.
    private func recordType(of line: ParsedLine) throws(LineRejection) -> RecordType {
        var type = defaultType
        for field in line.fields where ReadingRouter.isKey("_type", field, in: line) {
            guard case .string(let name) = try line.value(field) else {
                throw LineRejection(
                    reason: ValidationFailure.Reason.unknownType.description,
                    message: "field '_type' must be a string naming a declared record type"
                )
            }
            guard let named = typesByName[name] else {
                throw LineRejection(
                    reason: ValidationFailure.Reason.unknownType.description,
                    message: "record type \(quoted(name)) is not declared (declared: \(declaredNames))"
                )
            }
            type = named
        }
        guard let type else {
            if let (name, origin) = undeclaredDefault {
                throw LineRejection(
                    reason: ValidationFailure.Reason.unknownType.description,
                    message: "\(origin) \(quoted(name)) is not declared here (declared: \(declaredNames))"
                )
            }
            throw LineRejection(
                reason: "missing_type",
                message: "the reading has no '_type' and input '\(inputName)' has no type configured"
            )
        }
        return type
    }

    /// Sets the builder's fields and `_id` from the line.
    ///
    /// - Parameter verbatim: whether values whose JSON text the queue
    ///   stores as it is are set as that text, unconverted (the path into
    ///   an ``EncodedBatch``; a ``Record`` is built from converted values).
    private static func fill(
        _ builder: inout RecordBuilder,
        from line: ParsedLine,
        verbatim: Bool,
        requireID: Bool
    ) throws {
        let type = builder.type
        var hint = 0
        for field in line.fields {
            if let index = line.withKey(field, { type.fieldIndex(utf8: $0, hint: hint) }) {
                hint = index + 1
                if verbatim, var (text, form) = line.verbatim(field) {
                    if form == .plainString, type.storage.fieldTypes[index].kind == .timestamp,
                        VerbatimJSON.isCanonicalTimestamp(text)
                    {
                        form = .canonicalTimestamp
                    }
                    if try builder.setVerbatim(field: index, text, form: form) { continue }
                }
                try builder.set(field: index, try line.value(field))
            } else if ReadingRouter.isKey("_id", field, in: line) {
                try builder.setID(ReadingRouter.objectId(field, in: line) ?? line.value(field))
            } else if !ReadingRouter.isKey("_type", field, in: line) {
                throw RecordBuilder.unknownField(line.keyString(field), in: type)
            }
        }
        if requireID && !builder.hasID {
            // Null and the all-zero id would get a new random id: a re-sent record would be stored again.
            throw LineRejection(
                reason: "missing_id",
                message:
                    "the record has no usable '_id' (missing, null or all zeros): every record sent to the ingest protocol carries its ObjectId"
            )
        }
    }

    /// An `_id` given as 24 hexadecimal digits without escapes, read
    /// without a `String`; nil for anything else (converted as usual).
    private static func objectId(_ field: ParsedLine.Field, in line: ParsedLine) -> RawFieldValue? {
        guard let (text, form) = line.verbatim(field), form == .plainString, text.count == 26,
            let id = ObjectId(hexUTF8: UnsafeRawBufferPointer(rebasing: text[1..<25]))
        else { return nil }
        return .objectId(id)
    }

    private static func rejection(for error: any Error) -> LineRejection {
        switch error {
        case let error as LineRejection: return error
        case let error as EdgeIngestError:
            return LineRejection(
                reason: error.validationFailure?.reason.description ?? error.code.description,
                message: error.message
            )
        default: return LineRejection(reason: "invalid_record", message: "\(error)")
        }
    }
}
