/// The version of this package's programs: the one number a person reads as ours (`wehe --version`,
/// `wehe-server --version`, the summary paragraph of `wehe results show`, the User-Agent of the client's HTTP requests).
public enum WeheVersion {
    /// The version number, semantic versioning; raised with each release.
    public static let number = "0.1.0"

    /// The client version a client declares on the side channel (protocol.md section 2): that of the published
    /// clients, which servers of the public fleet expect. A protocol value, never shown as our version.
    public static let declaredClientVersion = "3.3"
}
