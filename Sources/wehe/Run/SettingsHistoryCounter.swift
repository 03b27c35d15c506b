import Foundation
import Synchronization
import WeheAnalysis
import WeheClient
import WeheCore
import WeheWire

/// Hands out history counts from the settings file, saving after each one (like the Java client's `info.txt`).
final class SettingsHistoryCounter: HistoryCounter {
    private let directory: DataDirectory
    private let settings: Mutex<WeheSettings>

    init(directory: DataDirectory, settings: WeheSettings) {
        self.directory = directory
        self.settings = Mutex(settings)
    }

    func next() async throws -> Int {
        let updated = settings.withLock { settings -> WeheSettings in
            settings.lastHistoryCount += 1
            return settings
        }
        try directory.save(updated)
        return updated.lastHistoryCount
    }
}
