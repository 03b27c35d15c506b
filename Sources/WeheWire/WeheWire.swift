import WeheCore
/// Byte formats (placeholder namespace until filled).
public enum WeheWire {}
