import WeheCore

/// Verdict logic (placeholder namespace until filled).
public enum WeheAnalysis {}
