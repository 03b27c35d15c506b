public import WeheWire

extension RecordingReport {
    /// The report for a terminal: privacy first (what identifies the app, what was rewritten or redacted), then
    /// the flows kept and dropped, idle gaps, bytes and time, what a classifier sees, and warnings.
    public var text: String {
        var out: [String] = []
        let kept = flows.filter(\.kept)
        out.append("Privacy: what this test carries (read before sharing it)")
        out.append("  your address \(clientAddress) is rewritten to \(clientRewrittenTo) in every flow")
        if redactions.isEmpty {
            out.append("  no cleartext cookie, Authorization header or query value in the kept flows")
        } else {
            for redaction in redactions {
                let what = redaction.kind == "query" ? "URL query values" : "\(redaction.kind) header values"
                out.append(
                    "  redacted in flow #\(redaction.flow): \(redaction.count) \(what) (\(redaction.bytes) bytes "
                        + "replaced by 'x', lengths kept)")
            }
        }
        out.append("  kept as recorded, and what identifies the app to anyone who reads the test:")
        for flow in kept {
            var parts = ["server \(flow.server)"]
            if let name = flow.serverName { parts.append("TLS server name \(name)") }
            if let host = flow.host { parts.append("HTTP Host \(host)") }
            if let up = flow.tlsRecordsUp {
                parts.append("TLS records up \(up.map(String.init).joined(separator: ","))")
            }
            if let down = flow.tlsRecordsDown {
                parts.append("down \(down.map(String.init).joined(separator: ","))")
            }
            out.append("    #\(flow.number) \(flow.transport): " + parts.joined(separator: "; "))
        }
        out.append("  payloads are kept byte for byte (encrypted ones stay encrypted); record sizes and timing too")
        out.append("")
        out.append("Quality")
        var framesLine = "  \(frames) frames read; \(otherHostFrames) of other hosts"
        if !skippedFrames.isEmpty {
            framesLine +=
                "; skipped: "
                + skippedFrames.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }
        out.append(framesLine)
        out.append("  flows of \(clientAddress): \(kept.count) kept, \(flows.count - kept.count) dropped")
        for flow in flows {
            let status = flow.kept ? "kept   " : "dropped"
            var line =
                "    #\(flow.number) \(status) \(flow.transport) \(flow.server) from port \(flow.clientPort): "
                + "\(flow.bytesUp) B up, \(flow.bytesDown) B down"
            if let reason = flow.dropReason { line += ": \(reason)" }
            if !flow.notes.isEmpty { line += " [" + flow.notes.joined(separator: "; ") + "]" }
            out.append(line)
        }
        if gaps.isEmpty {
            out.append("  no idle gap over \(Self.seconds(gapThreshold)) s")
        } else {
            for gap in gaps {
                var line = "  idle gap at \(Self.seconds(gap.start)) s: \(Self.seconds(gap.length)) s"
                if let shortened = gap.shortenedTo {
                    line += ", shortened to \(Self.seconds(shortened)) s"
                } else {
                    line += " (replayed as recorded; --shorten-gaps <seconds> shortens it)"
                }
                out.append(line)
            }
        }
        out.append(
            "  test \(testID) (\(transport)): \(bytesUp) B up, \(bytesDown) B down; one replay lasts "
                + "\(Self.seconds(replaySeconds)) s; a test (original and control) takes at least "
                + "\(Self.seconds(expectedTestSeconds)) s")
        out.append("  what a classifier on the path sees first:")
        for flow in kept {
            var parts: [String] = []
            if let name = flow.serverName { parts.append("SNI \(name)") }
            if let host = flow.host { parts.append("Host \(host)") }
            parts.append("first bytes \(flow.firstBytesHex.isEmpty ? "(none)" : flow.firstBytesHex)")
            out.append("    #\(flow.number) to \(flow.server): " + parts.joined(separator: ", "))
        }
        if !warnings.isEmpty {
            out.append("")
            out.append("Warnings")
            for warning in warnings { out.append("  " + warning) }
        }
        if !files.isEmpty {
            out.append("")
            out.append("Wrote")
            for file in files { out.append("  " + file) }
        }
        return out.joined(separator: "\n")
    }

    /// The report as JSON (`wehe record --json`).
    public var json: JSONValue {
        func number(_ value: Double) -> JSONValue { .number(value, text: JSONText.number(value)) }
        func integer(_ value: Int) -> JSONValue { .number(Double(value), text: String(value)) }
        func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        func sizes(_ value: [Int]?) -> JSONValue { value.map { .array($0.map(integer)) } ?? .null }
        return .object([
            ("test", .string(testID)),
            ("replayName", .string(replayName)),
            ("transport", .string(transport)),
            ("frames", integer(frames)),
            ("otherHostFrames", integer(otherHostFrames)),
            (
                "skippedFrames",
                .object(skippedFrames.sorted { $0.key < $1.key }.map { ($0.key, integer($0.value)) })
            ),
            ("clientAddress", .string(clientAddress)),
            ("clientRewrittenTo", .string(clientRewrittenTo)),
            (
                "flows",
                .array(
                    flows.map { flow in
                        .object([
                            ("number", integer(flow.number)),
                            ("transport", .string(flow.transport)),
                            ("server", .string(flow.server)),
                            ("clientPort", integer(flow.clientPort)),
                            ("serverName", optional(flow.serverName)),
                            ("host", optional(flow.host)),
                            ("bytesUp", integer(flow.bytesUp)),
                            ("bytesDown", integer(flow.bytesDown)),
                            ("kept", .bool(flow.kept)),
                            ("dropReason", optional(flow.dropReason)),
                            ("notes", .array(flow.notes.map(JSONValue.string))),
                            ("firstBytes", .string(flow.firstBytesHex)),
                            ("tlsRecordsUp", sizes(flow.tlsRecordsUp)),
                            ("tlsRecordsDown", sizes(flow.tlsRecordsDown)),
                        ])
                    })
            ),
            (
                "redactions",
                .array(
                    redactions.map {
                        .object([
                            ("flow", integer($0.flow)), ("kind", .string($0.kind)), ("count", integer($0.count)),
                            ("bytes", integer($0.bytes)),
                        ])
                    })
            ),
            (
                "gaps",
                .array(
                    gaps.map {
                        .object([
                            ("start", number($0.start)), ("length", number($0.length)),
                            ("shortenedTo", $0.shortenedTo.map(number) ?? .null),
                        ])
                    })
            ),
            ("bytesUp", integer(bytesUp)),
            ("bytesDown", integer(bytesDown)),
            ("replaySeconds", number(replaySeconds)),
            ("expectedTestSeconds", number(expectedTestSeconds)),
            ("warnings", .array(warnings.map(JSONValue.string))),
            ("files", .array(files.map(JSONValue.string))),
        ])
    }

    static func seconds(_ value: Double) -> String {
        // Two decimals below 10 s (a short replay's length matters), one above.
        let factor = abs(value) < 10 ? 100.0 : 10.0
        let scaled = (value * factor).rounded() / factor
        return scaled == scaled.rounded() ? String(Int(scaled)) : String(scaled)
    }
}
