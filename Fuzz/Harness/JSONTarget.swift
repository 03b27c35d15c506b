import WeheCore
import WeheWire

/// The JSON reader every JSON format above goes through (`JSONValue.parse` on `JSONScanner`), and the app catalog
/// files built on it (`CatalogDecoder`, both published layouts).
///
/// Invariants: a refusal is `.malformedJSON` with an offset inside the input; a parsed document serialised and
/// parsed again is the same value, and serialising that gives the same text.
enum JSONTarget {
    static func check(_ input: [UInt8]) {
        do {
            let value = try JSONValue.parse(input)
            let text = value.serialized()
            do {
                let again = try JSONValue.parse(Array(text.utf8))
                require(again == value, "JSON value changed in a round trip: \(text.prefix(200))")
                require(again.serialized() == text, "serialisation is not stable: \(text.prefix(200))")
            } catch {
                failed("a serialised JSON value is refused: \(error) in \(text.prefix(200))")
            }
        } catch {
            require(error.code == .malformedJSON, "JSON refused with \(error.code)")
            requireOffset(error, inside: input.count)
        }
        do {
            let catalog = try CatalogDecoder().decode(input)
            require(Set(catalog.entries.map(\.id)).count == catalog.entries.count, "duplicate test ids accepted")
        } catch {
            requireOffset(error, inside: input.count)
        }
    }
}
