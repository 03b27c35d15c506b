import Crypto

/// The one rule for a file or directory name built from client input (user IDs, replay names, extraStrings), used
/// by every writer that builds one: the packet capture (`PacketCapture.relativePath`) and the archive
/// (`ArchiveWriter`). A name the rule leaves alone is the client's text; any other is mapped, never refused, so that
/// no capture or archive file is lost to a strange name.
///
/// Kept as sent: 1 to `maximumBytes` bytes of `[A-Za-z0-9@._-]` (the published clients' user IDs, the replay names,
/// the usual extraStrings) that do not start with `.` (`.`, `..`, hidden files) or `-` (read as an option by shell
/// tools). Anything else is mapped: each byte outside that set (separators, control bytes, shell metacharacters,
/// spaces, non-ASCII) becomes `_`, a leading `.` or `-` becomes `_`, the result is cut to leave room, and
/// `+` and the first 16 hex digits of the SHA-256 of the client's text are appended. The suffix makes the mapping
/// deterministic (the same text always gives the same name, in every writer) and keeps different texts apart
/// (`a/b` and `a_b` stay two names: `+` never appears in a name kept as sent).
package enum ClientFileName {
    /// Longest name in bytes: a capture's file name holds three of them and stays within the 255 bytes of a file
    /// name on Linux file systems.
    package static let maximumBytes = 64

    /// Length of the hash suffix, `+` and 16 hex digits.
    static let suffixBytes = 17

    /// The name for a piece of client text.
    package static func component(_ text: String) -> String {
        let bytes = Array(text.utf8)
        if isKept(bytes) { return text }
        var mapped = bytes.map { isAllowed($0) ? $0 : UInt8(ascii: "_") }
        if let first = mapped.first, first == UInt8(ascii: ".") || first == UInt8(ascii: "-") {
            mapped[0] = UInt8(ascii: "_")
        }
        var name = Array(mapped.prefix(maximumBytes - suffixBytes))
        name.append(UInt8(ascii: "+"))
        let hex = Array("0123456789abcdef".utf8)
        for byte in SHA256.hash(data: bytes).prefix(8) {
            name.append(hex[Int(byte >> 4)])
            name.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// Whether a path component is one this rule can produce (or a fixed name of a writer: `replay`, `2026`,
    /// `tcpdumpsResults`): the writers' last check before they touch the disk.
    package static func isSafe(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255, bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return false
        }
        return bytes.allSatisfy { isAllowed($0) || $0 == UInt8(ascii: "+") }
    }

    private static func isKept(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maximumBytes, bytes[0] != UInt8(ascii: "."),
            bytes[0] != UInt8(ascii: "-")
        else { return false }
        return bytes.allSatisfy(isAllowed)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == UInt8(ascii: "@") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "-")
    }
}
