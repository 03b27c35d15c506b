import Foundation
import Testing
import WeheAnalysis
import WeheCore

private func parse(_ text: String) throws(WeheAnalysisError) -> ThroughputSeries {
    try SampleFile.parse(Data(text.utf8), name: "test.json")
}

@Test("Sample files: plain arrays and the upload shape, Java exponent notation")
func sampleFileShapes() throws {
    let plain = try parse("[1.5, 2, 0, 2.2E-4]")
    #expect(plain.mbps == [1.5, 2, 0, 0.00022])
    #expect(plain.times == [1, 2, 3, 4])
    let upload = try parse(" [[0.5,1E1,3],\n[0.08,0.16,0.24]] ")
    #expect(upload.mbps == [0.5, 10, 3])
    #expect(upload.times == [0.08, 0.16, 0.24])
}

@Test(
    "Sample files: clear errors for everything else",
    arguments: [
        ("", WeheAnalysisError.Code.malformedSampleFile),
        ("not json", .malformedSampleFile),
        ("{\"a\": 1}", .malformedSampleFile),
        ("[]", .malformedSampleFile),
        ("[[], []]", .malformedSampleFile),
        ("[[1, 2], [0.1, 0.2], [3]]", .malformedSampleFile),
        ("[\"1\", 2]", .malformedSampleFile),
        ("[true]", .malformedSampleFile),
        ("[[1, 2], [0.1]]", .mismatchedLengths),
        ("[1, -2]", .invalidSample),
        ("[[1, 2], [0.2, 0.1]]", .invalidTimes),
    ])
func sampleFileErrors(text: String, code: WeheAnalysisError.Code) {
    #expect(throws: WeheAnalysisError(code, "")) { try parse(text) }
}

@Test("Sample files: unreadable paths report the path")
func sampleFileUnreadable() {
    let path = "/nonexistent/wehe/\(UInt64.random(in: 0...UInt64.max)).json"
    do {
        _ = try SampleFile.read(path: path)
        Issue.record("reading \(path) should fail")
    } catch {
        #expect(error.code == .unreadableFile)
        #expect(error.message.contains(path))
    }
}

@Test("Analysis report: JSON keys and verdict values")
func analysisReportJSON() throws {
    let analyzer = try DifferentiationAnalyzer()
    let summary = try analyzer.analyze(
        original: ThroughputSeries(mbps: Vectors.cyc(1.5, 0.0625), interval: 0.1),
        control: ThroughputSeries(mbps: Vectors.cyc(8, 0.25), interval: 0.1), seed: 1)
    let report = AnalysisReport(summary: summary, originalSamples: 100, controlSamples: 100)
    let object = try #require(try JSONSerialization.jsonObject(with: report.jsonData()) as? [String: Any])
    #expect(object["verdict"] as? String == "differentiation")
    #expect(object["direction"] as? String == "throttled")
    #expect((object["area"] as? Double).map { abs($0 - 0.8125) < 1e-12 } == true)
    #expect((object["ksPValue"] as? Double).map { abs($0 - 2.20876e-59) < 1e-63 } == true)
    #expect(object["ksStatistic"] as? Double == 1)
    #expect(object["originalMeanMbps"] as? Double == 1.5)
    #expect(object["controlMeanMbps"] as? Double == 8)
    #expect(object["ruleSet"] as? String == "android")
    #expect(object["ratioThreshold"] is NSNull)
    #expect(object["note"] is NSNull)
    #expect(
        Set(object.keys).isSuperset(of: [
            "ksStatistic", "ksPValue", "area", "originalMeanMbps", "controlMeanMbps", "verdict",
        ]))
    #expect(report.text.hasPrefix("Differentiation detected (throttled)"))

    let clean = try analyzer.analyze(
        original: ThroughputSeries(mbps: Vectors.cyc(8, 0.25), interval: 0.1),
        control: ThroughputSeries(mbps: Vectors.cyc(8, 0.25, m: 11), interval: 0.1), seed: 1)
    #expect(AnalysisReport(summary: clean, originalSamples: 100, controlSamples: 100).verdict == "no-differentiation")
    let empty = try analyzer.analyze(
        original: ThroughputSeries(mbps: [0, 0], interval: 0.1),
        control: ThroughputSeries(mbps: [3, 4], interval: 0.1), seed: 1)
    let inconclusive = AnalysisReport(summary: empty, originalSamples: 2, controlSamples: 2)
    #expect(inconclusive.verdict == "inconclusive")
    #expect(inconclusive.text.contains("no positive throughput sample"))
}
