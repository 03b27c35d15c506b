import WeheCore
import WeheWire

/// Every side-channel message body a server or client reads (protocol.md section 5): the ID declaration, the
/// permission reply, the UDP notifications, the client's `DONE;<seconds>`, mobile statistics, the throughput upload,
/// the port map and a UDP slice's change spec. Each parser gets the whole input.
///
/// Invariants: a parsed message written again with its own `body` parses to the same value (the normalisations the
/// parsers document aside); accepted values are inside the documented ranges; refusals are thrown `WeheWireError`s
/// of the documented codes, with offsets inside the input.
enum SideChannelMessagesTarget {
    static func check(_ input: [UInt8]) {
        declaration(input)
        permission(input)
        notification(input)
        clientDone(input)
        mobileStats(input)
        throughput(input)
        portMap(input)
        slice(input)
    }

    /// The change spec of a UDP slice (our extension): accepted slices keep their documented bounds and survive a
    /// round trip through their own spec; other specs ask for none.
    static func slice(_ input: [UInt8]) {
        let parsed: UDPSlice?
        do {
            parsed = try UDPSlice(changeSpec: input)
        } catch {
            require(error.code == .invalidValue, "slice spec refused with \(error.code)")
            return
        }
        guard let slice = parsed else { return }
        require(
            slice.openingSeconds >= 0 && slice.from >= slice.openingSeconds && slice.seconds > 0
                && slice.from <= UDPSlice.longestSeconds && slice.seconds <= UDPSlice.longestSeconds,
            "slice \(slice.changeSpec) accepted")
        do {
            let again = try UDPSlice(changeSpec: Array(slice.changeSpec.utf8))
            require(again == slice, "slice changed in a round trip: \(slice.changeSpec)")
        } catch {
            failed("the spec of a parsed slice is refused: \(error)")
        }
    }

    static func declaration(_ input: [UInt8]) {
        let parsed: IDDeclaration
        do {
            parsed = try IDDeclaration(parsing: input)
        } catch {
            require(error.code == .invalidValue, "declaration refused with \(error.code)")
            return
        }
        require(IDDeclaration.isValidUserID(parsed.userID), "accepted user id '\(parsed.userID)'")
        require(parsed.testID >= 0 && parsed.testID < 1_000_000, "accepted test id \(parsed.testID)")
        require(parsed.historyCount >= 0, "accepted history count \(parsed.historyCount)")
        require(!parsed.replayName.isEmpty && parsed.replayName.count <= 128, "accepted replay name")
        require(!parsed.extraString.isEmpty, "empty extra string kept")
        let body = Array(parsed.body.utf8)
        // The body adds the default fields of a six-field declaration; past 1024 bytes it is refused by design.
        guard body.count <= 1024 else { return }
        var expected = parsed
        expected.clientVersion = parsed.clientVersion ?? "1.0"
        do {
            let again = try IDDeclaration(parsing: body)
            require(again == expected, "declaration changed in a round trip: \(parsed.body) → \(again.body)")
        } catch {
            failed("the body of a parsed declaration is refused: \(error)")
        }
    }

    static func permission(_ input: [UInt8]) {
        let reply: PermissionReply
        do {
            reply = try PermissionReply(parsing: input)
        } catch {
            require(error.code == .invalidValue, "permission reply refused with \(error.code)")
            return
        }
        if case .granted(_, let count, _) = reply {
            require(count > 0 && count <= 100_000, "grant of \(count) samples accepted")
        }
        let body = Array(reply.body.utf8)
        // Readers look at the first 256 bytes only.
        guard body.count <= 256 else { return }
        do {
            let again = try PermissionReply(parsing: body)
            require(again == reply, "permission reply changed in a round trip")
        } catch {
            failed("the body of a parsed permission reply is refused: \(error)")
        }
    }

    static func notification(_ input: [UInt8]) {
        guard let parsed = SideChannelMessage.Notification(parsing: input) else { return }
        require(
            SideChannelMessage.Notification(parsing: Array(parsed.body.utf8)) == parsed,
            "notification changed in a round trip: \(parsed.body)")
    }

    static func clientDone(_ input: [UInt8]) {
        guard let seconds = SideChannelMessage.parseClientDone(input) else { return }
        require(seconds.isFinite && seconds >= 0, "DONE with \(seconds) seconds accepted")
        let body = Array(SideChannelMessage.clientDone(durationSeconds: seconds).utf8)
        require(SideChannelMessage.parseClientDone(body) == seconds, "DONE;\(seconds) changed in a round trip")
    }

    static func mobileStats(_ input: [UInt8]) {
        let stats: MobileStats
        do {
            stats = try MobileStats(parsing: input)
        } catch {
            require(
                error.code == .malformedJSON || error.code == .unexpectedStructure,
                "mobile stats refused with \(error.code)")
            requireOffset(error, inside: input.count)
            return
        }
        for field in [stats.carrierName, stats.networkType, stats.latitude, stats.longitude, stats.manufacturer] {
            if let field { require(!field.isEmpty && field != "nil", "mobile stats field '\(field)' kept") }
        }
    }

    static func throughput(_ input: [UInt8]) {
        let series: ThroughputSeries
        do {
            series = try ThroughputUpload.parse(input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        require(series.mbps.count == series.times.count, "unequal sample lists accepted")
        require(series.count <= ThroughputUpload.maximumSamples, "\(series.count) samples accepted")
        require(
            (series.mbps + series.times).allSatisfy { $0.isFinite && $0 >= 0 },
            "a negative or non-finite sample accepted")
        do {
            let again = try ThroughputUpload.parse(Array(ThroughputUpload.body(series).utf8))
            require(again == series, "throughput upload changed in a round trip")
        } catch {
            failed("the body of a parsed throughput upload is refused: \(error)")
        }
    }

    static func portMap(_ input: [UInt8]) {
        let map: PortMap
        do {
            map = try PortMap(parsing: input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        for (isUDP, table) in [(false, map.tcp), (true, map.udp)] {
            for (address, ports) in table {
                for (key, endpoint) in ports {
                    require(endpoint.port >= 0 && endpoint.port <= 65535, "endpoint port \(endpoint.port) accepted")
                    if key.utf8.count == 5, key.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = UInt16(key) {
                        require(
                            map.endpoint(udp: isUDP, serverAddress: address, serverPort: port) == endpoint,
                            "port map lookup of \(address) \(key) misses its entry")
                    }
                }
            }
        }
        do {
            let again = try PortMap(parsing: Array(map.body.utf8))
            require(again == map, "port map changed in a round trip")
        } catch {
            failed("the body of a parsed port map is refused: \(error)")
        }
    }
}
