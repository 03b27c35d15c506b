/// Builds the bit-inverted control ("Random") replay of an original trace (protocol.md section 1.1, analysis.md
/// section 1.7), so that a classifier on the path cannot recognise it while sizes and timing stay the same.
///
/// Rule: every payload byte is XORed with `0xFF`, except in HTTP messages (a payload starting with a request method
/// such as `GET ` or with `HTTP/`), where the skeleton stays readable: the method, the request target's `?`, `=`
/// and `&` separators, parameter names, the version token, header names, `": "` and CRLFs are kept, and the path,
/// parameter values, header values and body are inverted.
///
/// The published control files were produced by a parser with two artefacts that this generator reproduces only
/// when `reproduceParserArtefacts` is on:
/// 1. since 2020, an inverted payload of odd length loses its last byte;
/// 2. a `?` is appended after an HTTP path without a query (the odd-length rule then cuts the message's last byte).
/// By default the control keeps every payload at its original length, which is what the comparison needs.
public struct ControlTraceGenerator: Sendable {
    /// Whether to reproduce the published parser's artefacts byte for byte.
    public var reproduceParserArtefacts: Bool

    /// Creates a generator.
    public init(reproduceParserArtefacts: Bool = false) {
        self.reproduceParserArtefacts = reproduceParserArtefacts
    }

    /// The control trace of `original`: same flows, timestamps, response lengths; inverted payloads; name with
    /// `Random` inserted before the date (`Youtube-02202024` → `YoutubeRandom-02202024`).
    public func control(of original: ReplayTrace) -> ReplayTrace {
        var control = original
        control.name = Self.controlName(of: original.name)
        for index in control.packets.indices {
            control.packets[index].payload = invert(control.packets[index].payload)
        }
        return control
    }

    /// The control name for an original replay name.
    public static func controlName(of name: String) -> String {
        guard let dash = name.lastIndex(of: "-") else { return name + "Random" }
        return name[..<dash] + "Random" + name[dash...]
    }

    /// Inverts one payload by the rule above.
    public func invert(_ payload: [UInt8]) -> [UInt8] {
        var result =
            HTTPSkeleton.looksLikeHTTP(payload)
            ? HTTPSkeleton.invertKeepingSkeleton(payload, appendQueryMark: reproduceParserArtefacts)
            : payload.map { $0 ^ 0xFF }
        if reproduceParserArtefacts, result.count % 2 == 1 {
            result.removeLast()
        }
        return result
    }

    /// Inverts every bit of `payload[range]` (used by the DPI search to break a classifier's match).
    public static func invertRegion(of payload: [UInt8], _ range: Range<Int>) -> [UInt8] {
        var copy = payload
        let clamped = range.clamped(to: 0..<payload.count)
        for index in clamped { copy[index] ^= 0xFF }
        return copy
    }
}

/// The HTTP part of the control rule.
enum HTTPSkeleton {
    static let methods: [[UInt8]] = ["GET ", "POST ", "HEAD ", "PUT ", "DELETE ", "OPTIONS ", "PATCH "].map {
        Array($0.utf8)
    }
    static let responsePrefix = Array("HTTP/".utf8)
    static let crlf: [UInt8] = [13, 10]

    static func looksLikeHTTP(_ payload: [UInt8]) -> Bool {
        if payload.starts(with: responsePrefix) { return true }
        return methods.contains { payload.starts(with: $0) }
    }

    static func invertKeepingSkeleton(_ payload: [UInt8], appendQueryMark: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 1)
        var position = 0
        // Start line.
        let lineEnd = find(crlf, in: payload, from: 0) ?? payload.count
        let startLine = Array(payload[0..<lineEnd])
        if payload.starts(with: responsePrefix) {
            out += startLine  // status line kept: version, code and reason carry no app identity
        } else {
            out += invertRequestLine(startLine, appendQueryMark: appendQueryMark)
        }
        position = lineEnd
        // Header lines until the empty line.
        while position < payload.count {
            if payload[position...].starts(with: crlf) {
                out += crlf
                position += 2
                let nextEnd = find(crlf, in: payload, from: position) ?? payload.count
                if nextEnd == position {
                    // Empty line: end of headers; the body follows.
                    out += crlf
                    position += 2
                    break
                }
                out += invertHeaderLine(Array(payload[position..<nextEnd]))
                position = nextEnd
            } else {
                // A lone CR or other stray byte: invert it like content.
                out.append(payload[position] ^ 0xFF)
                position += 1
            }
        }
        if position < payload.count {
            out += payload[min(position, payload.count)...].map { $0 ^ 0xFF }
        }
        return out
    }

    /// `METHOD SP target SP version`: method and version kept; in the target the path and parameter values are
    /// inverted while `?`, `=`, `&` and parameter names are kept.
    static func invertRequestLine(_ line: [UInt8], appendQueryMark: Bool) -> [UInt8] {
        guard let firstSpace = line.firstIndex(of: 0x20), let lastSpace = line.lastIndex(of: 0x20),
            lastSpace > firstSpace
        else { return line.map { $0 ^ 0xFF } }
        let version = line[(lastSpace + 1)...]
        guard version.starts(with: Array("HTTP/".utf8)) else { return line.map { $0 ^ 0xFF } }
        var out = Array(line[...firstSpace])
        let target = Array(line[(firstSpace + 1)..<lastSpace])
        if let question = target.firstIndex(of: UInt8(ascii: "?")) {
            out += target[..<question].map { $0 ^ 0xFF }
            out.append(UInt8(ascii: "?"))
            var inValue = false
            for byte in target[(question + 1)...] {
                switch byte {
                case UInt8(ascii: "&"):
                    inValue = false
                    out.append(byte)
                case UInt8(ascii: "=") where !inValue:
                    inValue = true
                    out.append(byte)
                default:
                    out.append(inValue ? byte ^ 0xFF : byte)
                }
            }
        } else {
            out += target.map { $0 ^ 0xFF }
            if appendQueryMark { out.append(UInt8(ascii: "?")) }
        }
        out += line[lastSpace...]
        return out
    }

    /// `Name: value`: name and `": "` kept, value inverted. A line without `": "` is inverted whole.
    static func invertHeaderLine(_ line: [UInt8]) -> [UInt8] {
        let separator: [UInt8] = [UInt8(ascii: ":"), 0x20]
        guard let colon = find(separator, in: line, from: 0) else { return line.map { $0 ^ 0xFF } }
        return Array(line[..<(colon + 2)]) + line[(colon + 2)...].map { $0 ^ 0xFF }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else {
            return nil
        }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}
