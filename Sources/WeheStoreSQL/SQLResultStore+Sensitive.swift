internal import Foundation
internal import SQLKit
internal import WeheCore
internal import WeheStore

/// The sensitive verdict of a test: JSON in the nullable `wehe_tests.sensitive` column (migration 5).
extension SQLResultStore {
    /// JSON with infinite interval bounds as "inf" / "-inf" (a bound the exact test cannot set with few rounds).
    static func sensitiveJSON(_ summary: SensitiveSummary) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(summary), as: UTF8.self)
    }

    static func sensitiveSummary(_ text: String) throws -> SensitiveSummary {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(SensitiveSummary.self, from: Data(text.utf8))
    }

    /// Sets the column of every test of `batch` (NULL for those without a sensitive verdict, so a rewrite clears it).
    static func writeSensitive(_ batch: [TestRecord], ids: [TestKey: Int64], on database: any SQLDatabase) async throws
    {
        let idList = Array(ids.values)
        guard !idList.isEmpty else { return }
        try await database.raw("UPDATE wehe_tests SET sensitive = NULL WHERE id IN (\(binds: idList))").run()
        for record in batch {
            guard let sensitive = record.sensitive, let id = ids[record.key] else { continue }
            let text = try sensitiveJSON(sensitive)
            try await database.raw("UPDATE wehe_tests SET sensitive = \(bind: text) WHERE id = \(bind: id)").run()
        }
    }

    /// The sensitive verdict in the `sensitive` column of a history row (`nil` when NULL).
    func historySensitive(_ row: any SQLRow) throws -> SensitiveSummary? {
        guard let text = try row.optional("sensitive", as: String.self) else { return nil }
        do {
            return try Self.sensitiveSummary(text)
        } catch {
            let id = (try? row.decode(column: "id", as: Int64.self)).map(String.init) ?? "?"
            throw WeheStoreError(.corrupted, database: databaseName, "the sensitive verdict of test row \(id)")
        }
    }

    /// The sensitive verdicts of the tests with the given row ids, by row id.
    func readSensitive(_ ids: [Int64], on database: any SQLDatabase) async throws -> [Int64: SensitiveSummary] {
        guard !ids.isEmpty else { return [:] }
        var found: [Int64: SensitiveSummary] = [:]
        for row in try await database.raw(
            "SELECT id, sensitive FROM wehe_tests WHERE id IN (\(binds: ids)) AND sensitive IS NOT NULL"
        ).all() {
            let id = try row.decode(column: "id", as: Int64.self)
            let text = try row.decode(column: "sensitive", as: String.self)
            do {
                found[id] = try Self.sensitiveSummary(text)
            } catch {
                throw WeheStoreError(.corrupted, database: databaseName, "the sensitive verdict of test row \(id)")
            }
        }
        return found
    }
}
