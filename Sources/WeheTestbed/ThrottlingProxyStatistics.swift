/// Counters of a running ``ThrottlingProxy``: what it saw and what it did to it.
///
/// Tests assert on these to prove that the middlebox classified what the test thinks it did (the userspace
/// counterpart of reading `tc -s class show` on the kernel testbed).
public struct ThrottlingProxyStatistics: Sendable, Hashable, CustomStringConvertible {
    /// TCP connections accepted.
    public var tcpFlows = 0
    /// UDP flows (distinct client addresses) seen.
    public var udpFlows = 0
    /// Flows the classifier matched.
    public var matchedFlows = 0
    /// UDP flows forgotten after the idle timeout.
    public var expiredFlows = 0
    /// Flows that ended because the upstream could not be reached or a socket failed.
    public var failedFlows = 0
    /// Bytes relayed from servers to clients.
    public var downloadBytes = 0
    /// Bytes relayed from clients to servers.
    public var uploadBytes = 0
    /// Bytes that went through a token bucket.
    public var shapedBytes = 0
    /// Datagrams dropped because the shaper's queue was full.
    public var queueDrops = 0
    /// Datagrams dropped by random loss (UDP).
    public var lostDatagrams = 0
    /// TCP pieces held back by random loss.
    public var stalledPieces = 0

    /// Creates zeroed counters.
    public init() {}

    /// One line of `name=value` pairs.
    public var description: String {
        "tcpFlows=\(tcpFlows) udpFlows=\(udpFlows) matchedFlows=\(matchedFlows) failedFlows=\(failedFlows) "
            + "expiredFlows=\(expiredFlows) "
            + "downloadBytes=\(downloadBytes) uploadBytes=\(uploadBytes) shapedBytes=\(shapedBytes) "
            + "queueDrops=\(queueDrops) lostDatagrams=\(lostDatagrams) stalledPieces=\(stalledPieces)"
    }
}
