import WeheWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes text to standard error without buffering.
func report(_ text: String) {
    var copy = text
    copy.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Aborts with a message when an invariant does not hold: libFuzzer reports the abort as a crash and keeps the input.
func require(
    _ condition: @autoclosure () -> Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    guard condition() else {
        report("wehe-fuzz: invariant violated at \(file):\(line): \(message())\n")
        abort()
    }
}

/// Aborts: a parser rejected what it (or its own encoder) produced.
func failed(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    report("wehe-fuzz: invariant violated at \(file):\(line): \(message)\n")
    abort()
}

/// Checks that an error names an offset inside the input (0 through its length) when it names one.
func requireOffset(_ error: WeheWireError, inside count: Int, file: StaticString = #fileID, line: UInt = #line) {
    if let offset = error.offset {
        require(
            offset >= 0 && offset <= count, "error offset \(offset) outside 0...\(count): \(error)", file: file,
            line: line)
    }
}
