/// The table schemas the reference server writes beside its spool (`datatypes/<table>.json`), byte for byte: M-Lab's
/// uploader loads each newline-delimited table with them.
enum ArchiveSchemas {
    /// File name (without `.json`) and content of each schema.
    static let all: [(table: String, json: String)] = [
        ("replayInfo1", replayInfo),
        ("clientXputs1", clientXputs),
        ("decisions1", decisions),
        ("localizeDecisions1", localizeDecisions),
    ]

    private static let testID =
        #"{"name": "testID", "type": "STRING", "mode": "REQUIRED", "description": "Replay type (0 for original and 1 for bit-inverted replay)"}"#

    private static func stats(_ name: String) -> String {
        let fields = ["max", "min", "average", "median", "std"].map {
            #"{"name": "\#($0)", "type": "FLOAT", "mode": "NULLABLE"}"#
        }
        return
            #"{"name": "\#(name)", "type": "RECORD", "mode": "NULLABLE", "fields": [\#(fields.joined(separator: ", "))]}"#
    }

    private static func nullable(_ name: String, _ type: String, _ description: String? = nil) -> String {
        guard let description else { return #"{"name": "\#(name)", "type": "\#(type)", "mode": "NULLABLE"}"# }
        return #"{"name": "\#(name)", "type": "\#(type)", "mode": "NULLABLE", "description": "\#(description)"}"#
    }

    private static func required(_ name: String, _ type: String) -> String {
        #"{"name": "\#(name)", "type": "\#(type)", "mode": "REQUIRED"}"#
    }

    private static func list(_ fields: [String]) -> String { "[" + fields.joined(separator: ", ") + "]" }

    static let replayInfo: String = {
        let os =
            #"{"name": "os", "type": "RECORD", "mode": "NULLABLE", "fields": "#
            + list([nullable("INCREMENTAL", "STRING"), nullable("RELEASE", "STRING"), nullable("SDK_INT", "INTEGER")])
            + "}"
        let location =
            #"{"name": "locationInfo", "type": "RECORD", "mode": "NULLABLE", "fields": "#
            + list([
                nullable("latitude", "FLOAT"), nullable("longitude", "FLOAT"), nullable("country", "STRING"),
                nullable("countryCode", "STRING"), nullable("city", "STRING"), nullable("localTime", "TIMESTAMP"),
            ]) + "}"
        let metadata =
            #"{"name": "metadata", "type": "RECORD", "mode": "NULLABLE", "fields": "#
            + list([
                nullable("cellInfo", "STRING"), nullable("model", "STRING"), nullable("manufacturer", "STRING"),
                nullable("carrierName", "STRING"), os, nullable("networkType", "STRING"), location,
                nullable("updatedCarrierName", "STRING"),
            ]) + "}"
        return list([
            required("timestamp", "TIMESTAMP"), required("userID", "STRING"), required("clientIP", "STRING"),
            nullable("clientIP2", "STRING"), required("replayName", "STRING"),
            nullable("extraString", "STRING", "Extra string sent from the client (not used)"),
            required("historyCount", "INTEGER"), testID,
            nullable("exception", "STRING", "The exception if any during the test"),
            nullable("testFinished", "BOOLEAN"), nullable("testFinishedWoutError", "BOOLEAN"),
            nullable("iperfInfo", "STRING"),
            nullable("testDurationServer", "FLOAT", "Test length (in seconds) recorded on the server"),
            nullable("testDurationClient", "FLOAT", "Test length (in seconds) recorded on the client"), metadata,
            nullable("emptyBool", "BOOLEAN", "A Boolean value no longer used"),
            nullable("clientVersion", "STRING", "The version of client app"),
            nullable("measurementUUID", "STRING", "Unique measurement identifier"),
        ])
    }()

    static let clientXputs: String = list([
        required("userID", "STRING"), required("historyCount", "INTEGER"), testID,
        #"{"name": "xputSamples", "type": "FLOAT", "mode": "REPEATED", "description": "throughput samples collected at client"}"#,
        #"{"name": "intervals", "type": "FLOAT", "mode": "REPEATED", "description": "time intervals at which the throughput samples are recorded"}"#,
    ])

    static let decisions: String = list([
        required("userID", "STRING"), required("historyCount", "INTEGER"), testID,
        nullable("avgXputDiffPct", "FLOAT", "avgXputDiff / max(control's avgXput, original's avgXput)"),
        nullable("KSAcceptRatio", "FLOAT", "KS test acceptance ratio"),
        nullable("avgXputDiff", "FLOAT", "control's avgXput - original's avgXput"),
        nullable("emptyField", "STRING", "not used anymore"), stats("originalXputStats"), stats("controlXputStats"),
        nullable("minXput", "FLOAT"), nullable("KSAvgDVal", "FLOAT", "Average D value of the sampled KS test"),
        nullable("KSAvgPVal", "FLOAT", "Average P value of the sampled KS test"),
        nullable("KSDVal", "FLOAT", "D value of the KS test"), nullable("KSPVal", "FLOAT", "P value of the KS test"),
    ])

    static let localizeDecisions: String = list([
        required("userID", "STRING"),
        #"{"name": "simReplayHistoryCounts", "type": "INTEGER", "mode": "REPEATED", "description": "historyCount values of simultaneous replays"}"#,
        testID,
        #"{"name": "localizeTestsList", "type": "STRING", "mode": "REPEATED", "description": "list of applied tests to localize traffic differentiation"}"#,
        nullable("localizeTestsResults", "JSON", "the output of tests in localizeTestsList"),
    ])
}
