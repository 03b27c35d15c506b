internal import Foundation
internal import WeheCore

extension TestKey {
    /// Checks the key's invariants: a non-empty user id without control characters, a non-negative count.
    package func validated(database: String) throws(WeheStoreError) -> TestKey {
        guard !userID.isEmpty, userID.count <= 255 else {
            throw WeheStoreError(.invalidRecord, database: database, "user id is empty or longer than 255 characters")
        }
        guard userID.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw WeheStoreError(.invalidRecord, database: database, "user id contains control characters")
        }
        guard historyCount >= 0 else {
            throw WeheStoreError(.invalidRecord, database: database, "history count \(historyCount) is negative")
        }
        return self
    }
}

extension ReplayRecord {
    /// Checks the key and the samples (equal lengths, finite non-negative throughput, non-decreasing times).
    package func validated(database: String) throws(WeheStoreError) -> ReplayRecord {
        _ = try key.test.validated(database: database)
        guard key.testID >= 0 else {
            throw WeheStoreError(.invalidRecord, database: database, "replay \(key): testID is negative")
        }
        do {
            _ = try samples.validated()
        } catch {
            throw WeheStoreError(
                .invalidRecord,
                database: database,
                "replay \(key): \(error.message)",
                underlying: error
            )
        }
        if let duration = clientDurationSeconds, !duration.isFinite {
            throw WeheStoreError(.invalidRecord, database: database, "replay \(key): client duration is not finite")
        }
        return self
    }
}

extension AnalysisRecord {
    /// Checks the key and the compared testID.
    package func validated(database: String) throws(WeheStoreError) -> AnalysisRecord {
        _ = try test.validated(database: database)
        guard comparedTestID >= 1 else {
            throw WeheStoreError(
                .invalidRecord,
                database: database,
                "analysis of \(test): compared testID \(comparedTestID) must be at least 1"
            )
        }
        return self
    }
}

extension TestRecord {
    /// Checks the key, that every replay and analysis belongs to it, and each of them.
    package func validated(database: String) throws(WeheStoreError) -> TestRecord {
        _ = try key.validated(database: database)
        for replay in replays {
            guard replay.key.test == key else {
                throw WeheStoreError(
                    .invalidRecord,
                    database: database,
                    "test \(key) holds replay \(replay.key) of another test"
                )
            }
            _ = try replay.validated(database: database)
        }
        guard Set(replays.map(\.key.testID)).count == replays.count else {
            throw WeheStoreError(.invalidRecord, database: database, "test \(key) holds one testID twice")
        }
        for analysis in analyses {
            guard analysis.test == key else {
                throw WeheStoreError(
                    .invalidRecord,
                    database: database,
                    "test \(key) holds an analysis of test \(analysis.test)"
                )
            }
            _ = try analysis.validated(database: database)
        }
        guard Set(analyses.map(\.comparedTestID)).count == analyses.count else {
            throw WeheStoreError(.invalidRecord, database: database, "test \(key) holds one analysis twice")
        }
        return self
    }
}

extension LocalizationRun {
    /// Checks the user id and that counts and servers come in equal numbers.
    package func validated(database: String) throws(WeheStoreError) -> LocalizationRun {
        guard let first = historyCounts.first else {
            throw WeheStoreError(.invalidRecord, database: database, "localization run without history counts")
        }
        _ = try TestKey(userID: userID, historyCount: first).validated(database: database)
        guard historyCounts.count == 2, servers.count == 2 else {
            throw WeheStoreError(
                .invalidRecord,
                database: database,
                "localization run of \(userID) needs two history counts and two servers"
            )
        }
        return self
    }
}

extension TestMetadata {
    /// The metadata as the store keeps it: address anonymised, time at store resolution.
    package func prepared(by policy: AnonymizationPolicy) -> TestMetadata {
        var copy = self
        copy.clientAddress = policy.anonymize(clientAddress)
        copy.startedAt = startedAt.storeRounded
        return copy
    }
}

extension SessionEvent {
    /// The event as the store keeps it: address anonymised, time at store resolution.
    package func prepared(by policy: AnonymizationPolicy) -> SessionEvent {
        var copy = self
        copy.clientAddress = policy.anonymize(clientAddress)
        copy.at = at.storeRounded
        return copy
    }
}
