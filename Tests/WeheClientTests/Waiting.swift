/// Waits up to 10 s for a condition that other tasks' socket work makes true (a side channel the client closes
/// without waiting for the server's close_notify is seen closed by the server a moment later).
func waitUntil(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<1000 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
