import NIOCore

/// The `WHATSMYIPMAN` public-address query served on every TCP replay listener (protocol.md section 4).
enum WhatsMyIP {
    private static let httpPrefix = Array("GET /WHATSMYIPMAN".utf8)
    private static let bare = Array("WHATSMYIPMAN?".utf8)

    /// What the first bytes of a connection say.
    enum Match {
        /// A `WHATSMYIPMAN` request.
        case query
        /// Not one.
        case other
        /// Too few bytes to tell (a prefix of the request arrived).
        case undecided
    }

    /// Classifies the first bytes of a connection.
    static func classify(_ bytes: ByteBufferView) -> Match {
        let head = Array(bytes.prefix(httpPrefix.count))
        if head.count >= httpPrefix.count {
            return head == httpPrefix ? .query : (bytes.elementsEqual(bare) ? .query : .other)
        }
        if httpPrefix.starts(with: head) || bare.starts(with: head) {
            return bytes.elementsEqual(bare) ? .query : .undecided
        }
        return .other
    }

    /// The address to report to a peer. A client told `127.0.0.1` loops forever asking again (protocol.md 4 and
    /// 15.1 item 7), so a peer seen as `127.0.0.1` is told the address it connected to instead, and `::1` when that
    /// is `127.0.0.1` too.
    static func answerAddress(peer: String, local: String) -> String {
        guard peer == "127.0.0.1" else { return peer }
        return local != "127.0.0.1" && !local.isEmpty ? local : "::1"
    }

    /// The HTTP answer: status line, length and close headers, the address.
    static func response(address: String) -> ByteBuffer {
        ByteBuffer(
            string: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(address.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(address)"
        )
    }
}
