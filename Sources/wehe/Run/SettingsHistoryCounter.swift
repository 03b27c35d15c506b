import WeheClient

/// Hands out history counts from the settings file (like the Java client's `info.txt`): each count is a
/// read-modify-write of `lastHistoryCount` alone, so a setting changed while tests run (`wehe settings set`) stays
/// as it was changed.
final class SettingsHistoryCounter: HistoryCounter {
    private let directory: DataDirectory

    init(directory: DataDirectory) {
        self.directory = directory
    }

    func next() async throws -> Int {
        try directory.update { $0.lastHistoryCount += 1 }.lastHistoryCount
    }
}
