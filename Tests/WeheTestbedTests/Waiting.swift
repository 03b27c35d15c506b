import Synchronization

/// Waits for a condition that becomes true through other tasks' work (socket I/O), yielding in between.
/// Fails the wait after `attempts` rounds so a broken test ends instead of hanging.
func waitUntil(attempts: Int = 2_000_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<attempts {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

/// A list that several tasks append to.
final class Recorder<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    var all: [Element] { elements.withLock { $0 } }
    func append(_ element: Element) { elements.withLock { $0.append(element) } }
}
