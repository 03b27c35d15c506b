import WeheClient

extension CLIError {
    /// The documented exit code of a client error.
    init(_ error: ReplayClientError) {
        let code: Code
        switch error.code {
        case .unreachable: code = .unreachable
        case .tlsFailed: code = .tlsFailed
        case .admissionRefused:
            switch error.denial?.rawValue {
            case 1: code = .replayUnknownOnServer
            case 2: code = .addressBusy
            case 3: code = .serverBusy
            default: code = .refused
            }
        case .protocolViolation: code = .protocolViolation
        case .serverStoppedAnswering: code = .serverStoppedAnswering
        case .replayFailed: code = .replayFailed
        case .portMapMissing: code = .portMapMissing
        case .analyzerFailed: code = .analyzerFailed
        case .resultMismatch: code = .resultMismatch
        case .missingTrace: code = .missingInput
        case .storeFailed: code = .storeFailed
        case .cancelled: code = .interrupted
        case .clientTracesRefused: code = .clientTracesRefused
        default: code = .invalidInput
        }
        self.init(code: code, error.message)
    }
}
