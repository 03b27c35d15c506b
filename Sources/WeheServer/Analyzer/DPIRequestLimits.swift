/// How many DPI requests the analyzer takes per client network (every DPI command) and per user (`DPIanalysis`): a
/// token bucket each, `perMinute` a minute with a burst of twice as many.
///
/// A real search sends one report per probe, and each probe is a replay of the app (seconds for a tiny trace, up to
/// 45 s): a 27-probe search (analysis.md 8.4, D1) fits in the per-user burst, a 200-probe search in about 6 minutes
/// of the per-user rate, which is about what its replays take anyway.
struct DPIRequestLimits: Sendable {
    let perUser: RateLimiter
    let perNetwork: RateLimiter

    init(perUserPerMinute: Int, perNetworkPerMinute: Int) {
        perUser = RateLimiter(perMinute: Double(perUserPerMinute), burst: 2 * perUserPerMinute)
        perNetwork = RateLimiter(perMinute: Double(perNetworkPerMinute), burst: 2 * perNetworkPerMinute)
    }

    /// `nil` when a request from `clientAddress` may go on, else why not.
    func admit(clientAddress: String) -> String? {
        guard perNetwork.allow(StoredReplayQuota.network(of: clientAddress)) else {
            return "too many DPI requests from your network: at most \(perNetwork.burst) at once and "
                + "\(Int(perNetwork.perMinute)) a minute"
        }
        return nil
    }

    /// `nil` when a `DPIanalysis` of `userID` may go on, else why not.
    func admit(userID: String) -> String? {
        guard perUser.allow(userID) else {
            return "too many DPIanalysis requests for this user: at most \(perUser.burst) at once and "
                + "\(Int(perUser.perMinute)) a minute"
        }
        return nil
    }
}
