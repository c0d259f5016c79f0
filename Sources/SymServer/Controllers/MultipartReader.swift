/// A streaming reader of `multipart/form-data` bodies (RFC 7578 over RFC 2046 §5.1), as
/// Crashpad's `HTTPMultipartBuilder` and libcurl's form posts (Breakpad's `HTTPUpload`) write them.
///
/// Bytes are fed as they arrive, in chunks of any size; the reader hands each part's headers and
/// then its bytes to a handler, and keeps at most one delimiter's length of a chunk between calls
/// (a delimiter may straddle two chunks), so memory stays bounded whatever the body's size and
/// every byte is looked at a bounded number of times: the delimiter search never rescans what it
/// has passed (no quadratic search). Part headers are bounded (`maximumHeaderBytes`), so are the
/// number of parts (`maximumParts`); anything malformed is a `MultipartError` saying where.
struct MultipartReader {
    /// Most bytes of one part's header block.
    static let maximumHeaderBytes = 16 << 10
    /// Most parts in one body.
    static let maximumParts = 1024

    /// A part's headers, as the form names it.
    struct PartHeaders: Sendable, Equatable {
        /// The `name` of `Content-Disposition: form-data`.
        var name: String
        /// The `filename`, for a file part.
        var filename: String?
        /// `Content-Type`, when the part states one.
        var contentType: String?
    }

    /// What the reader found, in order: a part's headers, its bytes (in pieces), its end; then the
    /// end of the body.
    enum Event {
        case headers(PartHeaders)
        case bytes(ArraySlice<UInt8>)
        case partEnd
    }

    private enum State {
        /// Before the first delimiter (the preamble, ignored).
        case preamble
        /// Just after a delimiter: `--` (the close) or line end (a part follows).
        case afterDelimiter
        /// In a part's header block.
        case headers
        /// In a part's body.
        case body
        /// After the close delimiter (the epilogue, ignored).
        case done
    }

    /// `CRLF--boundary`.
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes fed and not consumed yet (at most a header block or a delimiter's length between calls).
    private var pending: [UInt8]
    /// Bytes consumed before `pending` starts (for error offsets).
    private var consumedBefore = 0
    private var parts = 0
    /// Spaces and tabs skipped after a delimiter (transport padding, RFC 2046 §5.1.1).
    private var padding = 0
    /// Bytes of the current header block already searched for its end.
    private var headerScanned = 0

    /// The reader of a body whose `Content-Type` has `boundary`; nil when the boundary is not
    /// 1 to 70 characters of RFC 2046's set.
    init?(boundary: String) {
        let bytes = Array(boundary.utf8)
        guard (1...70).contains(bytes.count), bytes.allSatisfy(Self.isBoundaryCharacter), bytes.last != 0x20 else { return nil }
        delimiter = Array("\r\n--".utf8) + bytes
        // The first delimiter may open the body without a line end before it: seed one.
        pending = [0x0d, 0x0a]
        consumedBefore = -2
    }

    /// The boundary of a `multipart/form-data; boundary=…` content type; nil when it is another
    /// type or names no boundary.
    static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";", omittingEmptySubsequences: false)
        guard let type = pieces.first?.trimmingCharacters(in: .whitespaces).lowercased(), type == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() {
            let parameter = Array(piece.utf8)
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: parameter[..<equals], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
            guard name == "boundary" else { continue }
            var value = String(decoding: parameter[(equals + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }

    /// Whether the body ended with its close delimiter.
    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Reads `chunk`, calling `handler` for what it completes.
    mutating func feed(_ chunk: some Collection<UInt8>, _ handler: (Event) throws -> Void) throws {
        if case .done = state { return }  // the epilogue is ignored
        pending.append(contentsOf: chunk)
        var index = 0
        defer {
            pending.removeFirst(index)
            consumedBefore += index
        }
        loop: while true {
            switch state {
            case .preamble, .body:
                let inBody = { if case .body = state { return true } else { return false } }()
                guard let found = search(from: index) else {
                    // Keep what could be the start of a delimiter; hand the rest over.
                    let keep = max(index, pending.count - (delimiter.count - 1))
                    if inBody && keep > index { try handler(.bytes(pending[index..<keep])) }
                    index = keep
                    break loop
                }
                if inBody {
                    if found > index { try handler(.bytes(pending[index..<found])) }
                    try handler(.partEnd)
                }
                index = found + delimiter.count
                padding = 0
                state = .afterDelimiter
            case .afterDelimiter:
                // Transport padding, then `--` (close) or CRLF.
                while index < pending.count, pending[index] == 0x20 || pending[index] == 0x09 {
                    index += 1
                    padding += 1
                    guard padding <= 256 else { throw error("more than 256 spaces after a boundary", at: index) }
                }
                guard pending.count - index >= 2 else { break loop }
                if pending[index] == 0x2d && pending[index + 1] == 0x2d {
                    index = pending.count
                    state = .done
                    break loop
                }
                guard pending[index] == 0x0d && pending[index + 1] == 0x0a else {
                    throw error("a boundary is followed by neither a line end nor \"--\"", at: index)
                }
                index += 2
                parts += 1
                guard parts <= Self.maximumParts else { throw error("more than \(Self.maximumParts) parts", at: index) }
                state = .headers
            case .headers:
                guard let (end, bodyStart) = headerEnd(from: index) else {
                    guard pending.count - index <= Self.maximumHeaderBytes else {
                        throw error("a part's headers are over \(Self.maximumHeaderBytes) bytes", at: index)
                    }
                    // Resume the search where it stopped (three bytes back: CRLFCRLF may straddle).
                    headerScanned = max(0, pending.count - index - 3)
                    break loop
                }
                guard end - index <= Self.maximumHeaderBytes else {
                    throw error("a part's headers are over \(Self.maximumHeaderBytes) bytes", at: index)
                }
                let headers = try parseHeaders(pending[index..<end], at: index)
                try handler(.headers(headers))
                index = bodyStart
                headerScanned = 0
                state = .body
            case .done:
                index = pending.count
                break loop
            }
        }
    }

    /// Ends the body: an error unless the close delimiter was read.
    func finish() throws {
        guard isComplete else {
            let what = switch state {
            case .preamble: "no part (the boundary never appears)"
            case .headers: "a part's headers"
            default: "a part (no closing boundary)"
            }
            throw MultipartError(message: "the multipart body ends inside \(what)", offset: consumedBefore + pending.count)
        }
    }

    // MARK: Scanning

    /// The first delimiter at or after `start` in `pending`: each byte is compared against the
    /// delimiter's first byte once, and a candidate against at most the delimiter's length
    /// (at most 74 bytes), so the search is linear in the bytes fed.
    private func search(from start: Int) -> Int? {
        let count = delimiter.count
        var position = start
        while position + count <= pending.count {
            guard let candidate = pending[position...(pending.count - count)].firstIndex(of: 0x0d) else { return nil }
            var matched = true
            for offset in 1..<count where pending[candidate + offset] != delimiter[offset] {
                matched = false
                break
            }
            if matched { return candidate }
            position = candidate + 1
        }
        return nil
    }

    /// Where the header block starting at `start` ends and the part's bytes start: at `CRLFCRLF`,
    /// or at once for a part without header lines (it starts with CRLF). The search resumes at
    /// `headerScanned`, so a header block fed a byte at a time is still read in linear time.
    private func headerEnd(from start: Int) -> (end: Int, bodyStart: Int)? {
        if pending.count - start >= 2 && pending[start] == 0x0d && pending[start + 1] == 0x0a {
            return (start, start + 2)
        }
        var position = start + headerScanned
        while position + 4 <= pending.count {
            if pending[position] == 0x0d && pending[position + 1] == 0x0a && pending[position + 2] == 0x0d && pending[position + 3] == 0x0a {
                return (position, position + 4)
            }
            position += 1
        }
        return nil
    }

    // MARK: Headers

    private func parseHeaders(_ block: ArraySlice<UInt8>, at offset: Int) throws -> PartHeaders {
        var name: String?
        var filename: String?
        var contentType: String?
        var lineStart = block.startIndex
        let lines: [ArraySlice<UInt8>] = block.isEmpty ? [] : {
            var lines: [ArraySlice<UInt8>] = []
            var index = block.startIndex
            while index < block.endIndex {
                if block[index] == 0x0d, index + 1 < block.endIndex, block[index + 1] == 0x0a {
                    lines.append(block[lineStart..<index])
                    index += 2
                    lineStart = index
                } else {
                    index += 1
                }
            }
            lines.append(block[lineStart..<block.endIndex])
            return lines
        }()
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw error("a part header line has no colon", at: offset + (line.startIndex - block.startIndex))
            }
            let field = String(decoding: line[line.startIndex..<colon], as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[(colon + 1)...]
            switch field {
            case "content-disposition":
                let parameters = try Self.dispositionParameters(value)
                guard parameters.type == "form-data" else {
                    throw error("a part's Content-Disposition is \"\(parameters.type.prefix(40))\", not form-data", at: offset)
                }
                name = parameters.values["name"]
                filename = parameters.values["filename"]
            case "content-type":
                contentType = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            default:
                continue  // Content-Transfer-Encoding and others: RFC 7578 §4.7 deprecates them; ignored
            }
        }
        guard let name else { throw error("a part has no Content-Disposition name", at: offset) }
        return PartHeaders(name: name, filename: filename, contentType: contentType)
    }

    /// The type and parameters of a `Content-Disposition` value: `form-data; name="a"; filename="b"`.
    /// Quoted strings may hold backslash escapes (RFC 2616's quoted-pair) and `;`.
    static func dispositionParameters(_ value: ArraySlice<UInt8>) throws -> (type: String, values: [String: String]) {
        var bytes = value[...]
        func skipSpaces() { while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() } }
        func token() -> String {
            let end = bytes.firstIndex { $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "=") } ?? bytes.endIndex
            let text = String(decoding: bytes[..<end], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            bytes = bytes[end...]
            return text
        }
        skipSpaces()
        let type = token().lowercased()
        var values: [String: String] = [:]
        while let first = bytes.first {
            guard first == UInt8(ascii: ";") else { throw MultipartError(message: "a Content-Disposition parameter is malformed", offset: 0) }
            bytes = bytes.dropFirst()
            skipSpaces()
            if bytes.isEmpty { break }
            let key = token().lowercased()
            guard bytes.first == UInt8(ascii: "=") else {
                throw MultipartError(message: "the Content-Disposition parameter \"\(key.prefix(40))\" has no value", offset: 0)
            }
            bytes = bytes.dropFirst()
            skipSpaces()
            var text: [UInt8] = []
            if bytes.first == UInt8(ascii: "\"") {
                bytes = bytes.dropFirst()
                var closed = false
                while let byte = bytes.first {
                    bytes = bytes.dropFirst()
                    if byte == UInt8(ascii: "\\"), let next = bytes.first {
                        text.append(next)
                        bytes = bytes.dropFirst()
                    } else if byte == UInt8(ascii: "\"") {
                        closed = true
                        break
                    } else {
                        text.append(byte)
                    }
                }
                guard closed else { throw MultipartError(message: "a Content-Disposition value's quote is not closed", offset: 0) }
                skipSpaces()
            } else {
                let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
                text = Array(bytes[..<end])
                while let last = text.last, last == 0x20 || last == 0x09 { text.removeLast() }
                bytes = bytes[end...]
            }
            if values[key] == nil { values[key] = Self.unescapeFieldName(String(decoding: text, as: UTF8.self)) }
        }
        return (type, values)
    }

    /// Undoes the escaping Crashpad (`EncodeMIMEField`), Chrome and curl apply to names in a
    /// form-data header: `%22` `"`, `%0D` CR, `%0A` LF, and Crashpad's own `%25` `%`. Other `%`
    /// sequences are left as they are (an annotation may be named `100%ok`).
    static func unescapeFieldName(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count {
                let code = String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self).lowercased()
                let decoded: UInt8? = switch code {
                case "22": 0x22
                case "0d": 0x0d
                case "0a": 0x0a
                case "25": 0x25
                default: nil
                }
                if let decoded {
                    output.append(decoded)
                    index += 3
                    continue
                }
            }
            output.append(bytes[index])
            index += 1
        }
        bytes = output
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isBoundaryCharacter(_ byte: UInt8) -> Bool {
        // RFC 2046 §5.1.1 bchars: DIGIT / ALPHA / '()+_,-./:=? and space.
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"): true
        default: Array("'()+_,-./:=? ".utf8).contains(byte)
        }
    }

    private func error(_ message: String, at index: Int) -> MultipartError {
        MultipartError(message: message, offset: max(0, consumedBefore + index))
    }
}

/// A malformed multipart body: what is wrong and at which byte of the (decompressed) body.
struct MultipartError: Error, Sendable, Equatable, CustomStringConvertible {
    var message: String
    var offset: Int

    var description: String { "\(message) (at byte \(offset) of the body)" }
}
