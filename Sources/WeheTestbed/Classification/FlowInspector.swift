import Synchronization

/// The direction of relayed bytes.
package enum FlowDirection: Sendable, Hashable {
    /// Client to server.
    case upload
    /// Server to client.
    case download
}

/// The classification state of one relayed flow, shared by the tasks that relay its two directions.
///
/// A flow starts undecided (pattern classifier) or decided at creation (port, everything, nothing). Each
/// relayed chunk is appended to that direction's inspected prefix (at most `inspectedBytes`) and the prefix is
/// searched, so a pattern split across reads is still found. Once matched, a flow stays matched; once both
/// prefixes are full without a match, inspection stops.
package final class FlowInspector: Sendable {
    private struct State {
        var matched: Bool
        var decided: Bool
        var uploadPrefix: [UInt8] = []
        var downloadPrefix: [UInt8] = []
        var uploadBytes = 0
        var downloadBytes = 0
    }

    private let patterns: [[UInt8]]
    private let inspectedBytes: Int
    private let longestPattern: Int
    private let state: Mutex<State>

    /// Creates the state of a new flow on `route` under `classifier`.
    package init(
        classifier: ThrottlingProxyConfiguration.Classifier,
        route: ThrottlingProxyConfiguration.Route,
        inspectedBytes: Int
    ) {
        self.inspectedBytes = inspectedBytes
        var patterns: [[UInt8]] = []
        let matched: Bool
        let decided: Bool
        if !route.isClassified {
            (matched, decided) = (false, true)
        } else {
            switch classifier {
            case .everything: (matched, decided) = (true, true)
            case .nothing: (matched, decided) = (false, true)
            case .serverPorts(let ports): (matched, decided) = (ports.contains(route.upstream.port), true)
            case .patterns(let list):
                patterns = list
                (matched, decided) = (false, false)
            }
        }
        self.patterns = patterns
        longestPattern = patterns.map(\.count).max() ?? 0
        state = Mutex(State(matched: matched, decided: decided))
    }

    /// Whether the flow is matched (so far).
    package var isMatched: Bool { state.withLock { $0.matched } }

    /// Inspects a chunk about to be relayed in `direction`; returns whether the flow is matched now and whether
    /// this chunk made it so.
    package func inspect(_ bytes: some Collection<UInt8>, direction: FlowDirection) -> (
        matched: Bool, newlyMatched: Bool
    ) {
        state.withLock { state in
            guard !state.decided else { return (state.matched, false) }
            let room = inspectedBytes - (direction == .upload ? state.uploadPrefix.count : state.downloadPrefix.count)
            guard room > 0, !bytes.isEmpty else { return (state.matched, false) }
            let searchFrom: Int
            switch direction {
            case .upload:
                searchFrom = max(0, state.uploadPrefix.count - longestPattern + 1)
                state.uploadPrefix.append(contentsOf: bytes.prefix(room))
            case .download:
                searchFrom = max(0, state.downloadPrefix.count - longestPattern + 1)
                state.downloadPrefix.append(contentsOf: bytes.prefix(room))
            }
            let prefix = direction == .upload ? state.uploadPrefix : state.downloadPrefix
            if patterns.contains(where: { BytePattern.occurs($0, in: prefix, from: searchFrom) }) {
                state.matched = true
                state.decided = true
                state.uploadPrefix = []
                state.downloadPrefix = []
                return (true, true)
            }
            if state.uploadPrefix.count >= inspectedBytes, state.downloadPrefix.count >= inspectedBytes {
                state.decided = true
                state.uploadPrefix = []
                state.downloadPrefix = []
            }
            return (false, false)
        }
    }

    /// Bytes relayed so far in `direction`.
    package func relayedBytes(_ direction: FlowDirection) -> Int {
        state.withLock { direction == .upload ? $0.uploadBytes : $0.downloadBytes }
    }

    /// Counts `count` bytes relayed in `direction`.
    package func addRelayed(_ count: Int, direction: FlowDirection) {
        state.withLock { state in
            switch direction {
            case .upload: state.uploadBytes += count
            case .download: state.downloadBytes += count
            }
        }
    }
}
