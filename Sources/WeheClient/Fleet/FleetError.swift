/// Why the way into the public fleet (or an operator's locate-compatible fleet) failed: the locate call, the access
/// envelope, or the envelope closing under a running test.
///
/// Each code maps to one documented exit code of the `wehe` command.
public struct FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem this is.
    public enum Code: String, Sendable, Hashable {
        /// The locate service could not be reached (name not found, connection refused, TLS failure).
        case locateUnreachable
        /// The locate service did not answer within the timeout.
        case locateTimedOut
        /// The locate service answered with an `error` object or a status other than 2xx.
        case locateRefused
        /// The locate service answered with an empty result list (no server available).
        case locateEmpty
        /// The locate service's answer is not the locate v2 format.
        case locateMalformed
        /// The locate service answered 429: this address and User-Agent asked too often.
        case locateRateLimited
        /// No access envelope of any located server opened.
        case noEnvelope
        /// The access envelope closed while the test was running.
        case envelopeClosed
        /// The fleet options are invalid (a URL that is not one).
        case invalidConfiguration
    }

    /// The kind of problem.
    public var code: Code
    /// One line for people.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message`.
    public var description: String { message }
}
