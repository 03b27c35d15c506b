import WeheWire

/// The analyzer's request parameters (`FormParameters`, used by the server for the query string and the form body,
/// and the DPI search's `DPIAnalysisRequest` read from them) and the answers a client reads back
/// (`SingleResult.parse`, `AnalyzerFailure`, `DPIAnalysisResponse.parse`).
///
/// Invariants: no parameter has an empty key; the parameters written with `encode` parse back to the same
/// dictionary; a DPI request written as a form reads back the same; a parsed answer written again with its own body
/// parses to the same body (or value), a failure to the same message; refusals are thrown with offsets inside the
/// input.
enum AnalyzerFormTarget {
    static func check(_ input: [UInt8]) {
        let parameters = form(String(decoding: input, as: UTF8.self))
        dpiRequest(parameters)
        answer(input)
        dpiAnswer(input)
    }

    @discardableResult
    static func form(_ text: String) -> [String: String] {
        let parameters = FormParameters.parse(text)
        require(!parameters.keys.contains(""), "an empty key was kept")
        let pairs = parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let encoded = FormParameters.encode(pairs)
        require(
            encoded.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: " ") },
            "encoded form is not plain ASCII: \(encoded)")
        require(FormParameters.parse(encoded) == parameters, "parameters changed in a round trip: \(encoded)")
        return parameters
    }

    static func dpiRequest(_ parameters: [String: String]) {
        let request: DPIAnalysisRequest
        do {
            request = try DPIAnalysisRequest(form: parameters)
        } catch {
            require(
                error.code == .unexpectedStructure || error.code == .invalidValue,
                "DPI request refused with \(error.code)")
            return
        }
        require(
            request.asksForCurrentProbe || (request.testedLeft >= 0 && request.testedRight > request.testedLeft),
            "DPI request region [\(request.testedLeft), \(request.testedRight)) accepted")
        require(request.historyCount >= 0 && request.testID >= 0, "negative DPI request counter accepted")
        let encoded = FormParameters.encode(request.formPairs)
        do {
            let again = try DPIAnalysisRequest(form: FormParameters.parse(encoded))
            require(again == request, "DPI request changed in a round trip: \(encoded)")
        } catch {
            failed("a DPI request's own form is refused: \(error) in \(encoded)")
        }
    }

    static func dpiAnswer(_ input: [UInt8]) {
        _ = DPIAnalysisResponse.errorCode(input)
        let parsed: Result<DPIAnalysisResponse, AnalyzerFailure>
        do {
            parsed = try DPIAnalysisResponse.parse(input)
        } catch {
            requireOffset(error, inside: input.count)
            return
        }
        guard case .success(let response) = parsed else { return }
        let body = response.responseBody()
        do {
            let again = try DPIAnalysisResponse.parse(Array(body.utf8))
            require(again == .success(response), "DPI answer changed in a round trip: \(body.prefix(300))")
        } catch {
            failed("a DPI answer's own body is refused: \(error) in \(body.prefix(300))")
        }
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
