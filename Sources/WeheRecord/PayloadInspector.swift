/// What a classifier can read in a flow's first bytes, and the cleartext secrets a recording must not carry.
enum PayloadInspector {
    /// The server name (SNI) of a TLS ClientHello at the start of `bytes`, when there is one.
    static func serverName(inClientHello bytes: [UInt8]) -> String? {
        // TLS record: type 22 (handshake), version, length; handshake: type 1 (ClientHello), 3-byte length.
        guard bytes.count > 9, bytes[0] == 22, bytes[1] == 3, bytes[5] == 1 else { return nil }
        var offset = 9 + 2 + 32  // handshake header, client version, random
        func skip(lengthBytes: Int) -> Bool {
            guard offset + lengthBytes <= bytes.count else { return false }
            var length = 0
            for index in 0..<lengthBytes { length = length << 8 | Int(bytes[offset + index]) }
            offset += lengthBytes + length
            return offset <= bytes.count
        }
        guard skip(lengthBytes: 1), skip(lengthBytes: 2), skip(lengthBytes: 1) else { return nil }
        guard offset + 2 <= bytes.count else { return nil }
        let extensionsEnd = min(bytes.count, offset + 2 + (Int(bytes[offset]) << 8 | Int(bytes[offset + 1])))
        offset += 2
        while offset + 4 <= extensionsEnd {
            let type = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let body = offset + 4
            guard body + length <= extensionsEnd else { return nil }
            if type == 0, length >= 5, bytes[body + 2] == 0 {
                let nameLength = Int(bytes[body + 3]) << 8 | Int(bytes[body + 4])
                guard body + 5 + nameLength <= body + length else { return nil }
                let name = bytes[(body + 5)..<(body + 5 + nameLength)]
                guard name.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
                return String(decoding: name, as: UTF8.self)
            }
            offset = body + length
        }
        return nil
    }

    /// The sizes of the first `limit` TLS records in a stream (nil when the stream does not start with a record).
    static func tlsRecordSizes(_ bytes: [UInt8], limit: Int = 6) -> [Int]? {
        var sizes: [Int] = []
        var offset = 0
        while offset + 5 <= bytes.count, sizes.count < limit {
            guard (20...24).contains(bytes[offset]), bytes[offset + 1] == 3 else { break }
            let length = Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            sizes.append(length)
            offset += 5 + length
        }
        return sizes.isEmpty ? nil : sizes
    }

    /// Whether the bytes start an HTTP/1 request or response.
    static func looksLikeHTTP(_ bytes: [UInt8]) -> Bool {
        let starts = ["GET ", "POST ", "HEAD ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "HTTP/1."]
        return starts.contains { bytes.starts(with: Array($0.utf8)) }
    }

    /// The value of the first `Host` header in an HTTP request.
    static func host(inHTTP bytes: [UInt8]) -> String? {
        guard looksLikeHTTP(bytes) else { return nil }
        for line in lines(bytes) {
            let text = bytes[line]
            if text.isEmpty { break }
            if hasHeaderName(text, "host") {
                let value = text.dropFirst(5).drop { $0 == 0x20 || $0 == 0x09 }
                return String(decoding: value.prefix(255), as: UTF8.self)
            }
        }
        return nil
    }

    /// One cleartext secret found in a stream.
    struct Finding: Sendable, Hashable {
        /// `Cookie`, `Set-Cookie`, `Authorization`, `Proxy-Authorization` or `query`.
        var kind: String
        /// Bytes replaced.
        var length: Int
    }

    /// Header names whose values identify the user.
    static let identifyingHeaders = ["cookie", "set-cookie", "authorization", "proxy-authorization"]

    /// Replaces, keeping every length, the values of identifying headers and of URL query parameters in the HTTP
    /// messages of `bytes` with `x`. Returns the findings (empty when there was nothing to redact).
    static func redactHTTP(_ bytes: inout [UInt8]) -> [Finding] {
        guard looksLikeHTTP(bytes) else { return [] }
        var findings: [Finding] = []
        let redacted = UInt8(ascii: "x")
        for line in lines(bytes) {
            let text = bytes[line]
            if let name = identifyingHeaders.first(where: { hasHeaderName(text, $0) }) {
                var start = line.lowerBound + name.utf8.count + 1
                while start < line.upperBound, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
                guard start < line.upperBound else { continue }
                for index in start..<line.upperBound { bytes[index] = redacted }
                findings.append(Finding(kind: canonicalName(name), length: line.upperBound - start))
            } else if isRequestLine(text), let question = text.firstIndex(of: UInt8(ascii: "?")),
                let targetEnd = text.lastIndex(of: 0x20), question < targetEnd
            {
                // Parameter names stay; each value (after '=' up to '&', '#' or the end of the target) is replaced.
                var inValue = false
                var count = 0
                for index in (question + 1)..<targetEnd {
                    switch bytes[index] {
                    case UInt8(ascii: "&"), UInt8(ascii: "#"): inValue = false
                    case UInt8(ascii: "=") where !inValue: inValue = true
                    default:
                        if inValue {
                            bytes[index] = redacted
                            count += 1
                        }
                    }
                }
                if count > 0 { findings.append(Finding(kind: "query", length: count)) }
            }
        }
        return findings
    }

    private static func canonicalName(_ name: String) -> String {
        switch name {
        case "cookie": "Cookie"
        case "set-cookie": "Set-Cookie"
        case "authorization": "Authorization"
        default: "Proxy-Authorization"
        }
    }

    private static func isRequestLine(_ line: ArraySlice<UInt8>) -> Bool {
        guard line.count > 12, line.suffix(9).starts(with: Array(" HTTP/1.".utf8)) else { return false }
        return looksLikeHTTP(Array(line.prefix(8)))
    }

    /// Whether a line starts with `name:` (case-insensitive).
    private static func hasHeaderName(_ line: ArraySlice<UInt8>, _ name: String) -> Bool {
        let nameBytes = Array(name.utf8)
        guard line.count > nameBytes.count, line[line.startIndex + nameBytes.count] == UInt8(ascii: ":") else {
            return false
        }
        for (offset, byte) in nameBytes.enumerated() {
            var candidate = line[line.startIndex + offset]
            if candidate >= 65, candidate <= 90 { candidate += 32 }
            if candidate != byte { return false }
        }
        return true
    }

    /// The CRLF-terminated lines of `bytes` as ranges without their line ends (a last unterminated line included).
    private static func lines(_ bytes: [UInt8]) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var start = 0
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == 13, bytes[index + 1] == 10 {
                result.append(start..<index)
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        if start < bytes.count { result.append(start..<bytes.count) }
        return result
    }
}
