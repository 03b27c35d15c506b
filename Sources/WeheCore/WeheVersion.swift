/// The version of this package's programs (`wehe --version`, `wehe-server --version`). Not the protocol version a
/// client declares on the side channel (protocol.md section 2: "3.3"), which stays that of the published clients.
public enum WeheVersion {
    /// The version number, semantic versioning; raised with each release.
    public static let number = "0.1.0"
}
