public import WeheCore

/// The first side-channel message of a replay (protocol.md section 5.2 #1):
/// `<userID>;<testID>;<replayName>;<extraString>;<historyCount>;<endOfTest>;<realIP>;<version>`.
/// Servers also accept the first six fields alone.
public struct IDDeclaration: Sendable, Hashable {
    /// Per-installation id, opaque ASCII without `;`.
    public var userID: String
    /// 0 original, 1 control, ≥ 2 DPI probes.
    public var testID: Int
    /// The replay name (element 3 of the trace), e.g. `Youtube-02202024`.
    public var replayName: String
    /// Free text echoed in results (`"0"` for the Java client without M-Lab).
    public var extraString: String
    /// Per-user test counter.
    public var historyCount: Int
    /// Whether this is the last replay of the test (advisory).
    public var endOfTest: Bool
    /// The client's public address as it believes it (`127.0.0.1` when unknown).
    public var realIP: String
    /// Client version (`3.3` for the Java client); `nil` in a six-field declaration.
    public var clientVersion: String?

    /// Creates a declaration.
    public init(
        userID: String,
        testID: Int,
        replayName: String,
        extraString: String = "0",
        historyCount: Int,
        endOfTest: Bool,
        realIP: String = "127.0.0.1",
        clientVersion: String? = WeheVersion.declaredClientVersion
    ) {
        self.userID = userID
        self.testID = testID
        self.replayName = replayName
        self.extraString = extraString
        self.historyCount = historyCount
        self.endOfTest = endOfTest
        self.realIP = realIP
        self.clientVersion = clientVersion
    }

    /// The key of the replay this declares.
    public var replayKey: ReplayKey { ReplayKey(userID: userID, historyCount: historyCount, testID: testID) }

    /// The message body (eight fields; `endOfTest` as `True`/`False` like the Java client).
    public var body: String {
        [
            userID, String(testID), replayName, extraString, String(historyCount), endOfTest ? "True" : "False", realIP,
            clientVersion ?? "1.0",
        ].joined(separator: ";")
    }

    /// Parses a declaration.
    /// - Throws: `WeheWireError` `.invalidValue` naming the field.
    public init(parsing body: [UInt8]) throws(WeheWireError) {
        guard body.count <= 1024, body.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw WeheWireError(
                .invalidValue, "ID declaration is not printable ASCII of at most 1024 bytes", field: "declaration")
        }
        let fields = String(decoding: body, as: UTF8.self).split(separator: ";", omittingEmptySubsequences: false)
            .map(String.init)
        guard fields.count == 6 || fields.count == 8 else {
            throw WeheWireError(
                .invalidValue, "ID declaration has \(fields.count) fields, expected 6 or 8", field: "declaration")
        }
        guard Self.isValidUserID(fields[0]) else {
            throw WeheWireError(.invalidValue, "user id must be 1-64 characters of [A-Za-z0-9@._-]", field: "userID")
        }
        guard let testID = Int(fields[1]), testID >= 0, testID < 1_000_000 else {
            throw WeheWireError(
                .invalidValue, "test id '\(fields[1].prefix(12))' is not a small non-negative integer", field: "testID")
        }
        guard !fields[2].isEmpty, fields[2].count <= 128 else {
            throw WeheWireError(.invalidValue, "replay name is empty or too long", field: "replayName")
        }
        guard let historyCount = Int(fields[4]), historyCount >= 0 else {
            throw WeheWireError(
                .invalidValue, "history count '\(fields[4].prefix(12))' is not a non-negative integer",
                field: "historyCount")
        }
        self.userID = fields[0]
        self.testID = testID
        self.replayName = fields[2]
        self.extraString = fields[3].isEmpty ? "extraString" : fields[3]
        self.historyCount = historyCount
        self.endOfTest = fields[5].lowercased() == "true"
        self.realIP = fields.count == 8 ? fields[6] : "127.0.0.1"
        self.clientVersion = fields.count == 8 ? fields[7] : nil
    }

    /// Whether a user id is acceptable: the published clients use 10 characters of `[A-Za-z0-9]` or `@` + 9; the
    /// server uses it as a storage key, so `;`, `/` and whitespace are refused.
    public static func isValidUserID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "@") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            }
    }
}
