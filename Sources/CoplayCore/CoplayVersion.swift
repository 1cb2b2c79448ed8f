/// coplay's version: printed by `coplay --version` and at start, and sent to a relay's server
/// in CONNECT. The one place it is written.
public enum CoplayVersion {
    public static let current = "0.1.0"
}
