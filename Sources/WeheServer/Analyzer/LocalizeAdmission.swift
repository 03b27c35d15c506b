/// Who may run `localize` now. Anyone may call it, and each call may make this server send signed requests to its
/// peers (each costing the peer a remembered nonce) and store a row, so it is limited three ways: per client
/// address, per client network (the /24 of an IPv4 address, the /64 of an IPv6 one: one host or customer holds
/// many addresses of it) and per user id (a localization belongs to one user's tests).
final class LocalizeAdmission: Sendable {
    /// Requests per client address.
    let perAddress: RateLimiter
    /// Requests per client network (/24, /64).
    let perNetwork: RateLimiter
    /// Requests per user id.
    let perUser: RateLimiter

    /// Creates the limits; each allows a burst of its minute's requests.
    init(perAddressPerMinute: Int, perNetworkPerMinute: Int, perUserPerMinute: Int) {
        perAddress = RateLimiter(perMinute: Double(perAddressPerMinute), burst: perAddressPerMinute)
        perNetwork = RateLimiter(perMinute: Double(perNetworkPerMinute), burst: perNetworkPerMinute)
        perUser = RateLimiter(perMinute: Double(perUserPerMinute), burst: perUserPerMinute)
    }

    /// Takes one request from `clientAddress`'s address and network budgets; the reason when one is spent.
    func admit(clientAddress: String, now: ContinuousClock.Instant = .now) -> String? {
        let address = AddressText.normalized(clientAddress)
        guard perAddress.allow(address, now: now) else {
            return "too many localize requests from this address; try again in a minute"
        }
        guard perNetwork.allow(AddressText.network(address), now: now) else {
            return "too many localize requests from this network; try again in a minute"
        }
        return nil
    }

    /// Takes one request from `userID`'s budget; the reason when it is spent.
    func admit(userID: String, now: ContinuousClock.Instant = .now) -> String? {
        perUser.allow(userID, now: now) ? nil : "too many localize requests for this user; try again in a minute"
    }
}
