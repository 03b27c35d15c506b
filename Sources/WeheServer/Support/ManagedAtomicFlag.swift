import Synchronization

/// A flag set once from the event loop (a deadline that fired) and read afterwards by the task it concerns.
final class ManagedAtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    init() {}

    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
