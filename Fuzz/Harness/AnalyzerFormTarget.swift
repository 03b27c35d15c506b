import WeheWire

/// The analyzer's request parameters (`FormParameters`, used by the server for the query string and the form body)
/// and the answers a client reads back (`SingleResult.parse`, `AnalyzerFailure`).
///
/// Invariants: no parameter has an empty key; the parameters written with `encode` parse back to the same
/// dictionary and each key and value survives `encodeComponent`; a parsed answer written again with its own body
/// parses to the same body, a failure to the same message; refusals are thrown with offsets inside the input.
enum AnalyzerFormTarget {
    static func check(_ input: [UInt8]) {
        form(String(decoding: input, as: UTF8.self))
        answer(input)
    }

    static func form(_ text: String) {
        let parameters = FormParameters.parse(text)
        require(!parameters.keys.contains(""), "an empty key was kept")
        let pairs = parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let encoded = FormParameters.encode(pairs)
        require(
            encoded.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: " ") },
            "encoded form is not plain ASCII: \(encoded)")
        require(FormParameters.parse(encoded) == parameters, "parameters changed in a round trip: \(encoded)")
    }

    static func answer(_ input: [UInt8]) {
        let parsed: Result<SingleResult, AnalyzerFailure>
        do {
            parsed = try SingleResult.parse(input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        switch parsed {
        case .success(let result):
            let body = result.responseBody
            do {
                guard case .success(let again) = try SingleResult.parse(Array(body.utf8)) else {
                    failed("a result's own body reads as a failure: \(body)")
                }
                require(again.responseBody == body, "result changed in a round trip: \(body) → \(again.responseBody)")
            } catch {
                failed("a result's own body is refused: \(error)")
            }
        case .failure(let failure):
            do {
                guard case .failure(let again) = try SingleResult.parse(Array(failure.body.utf8)) else {
                    failed("a failure's own body reads as a result: \(failure.body)")
                }
                require(again.message == failure.message, "failure message changed in a round trip")
            } catch {
                failed("a failure's own body is refused: \(error)")
            }
        }
    }
}
