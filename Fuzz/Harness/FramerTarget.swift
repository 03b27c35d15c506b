import WeheWire

/// The side channel's length-prefixed framing (`SideChannelFramer`), fed like a socket: the stream arrives in chunks
/// of varying size. Input: byte 0 seeds the chunk sizes, byte 1 picks the body limit and how often the stream is
/// repeated (long streams reach the buffer compaction), the rest is the stream.
///
/// Invariants: the frames and the error (code and offset) are those of a plain reference reading of the whole
/// stream, whatever the chunking; `bufferedByteCount` is what arrived minus what was returned; every body framed
/// again with `frame(_:)` reads back as itself and leaves nothing buffered.
enum FramerTarget {
    static let limits = [0, 7, 64, 4096, SideChannelFramer.defaultMaximumBodyLength]
    static let repetitions = [1, 2, 5, 40]

    static func check(_ input: [UInt8]) {
        guard input.count >= 2 else { return }
        let limit = limits[Int(input[1] & 0x0F) % limits.count]
        let repeatCount = repetitions[Int(input[1] >> 4) % repetitions.count]
        var stream: [UInt8] = []
        for _ in 0..<repeatCount { stream += input[2...] }
        let expected = reference(stream, limit: limit)

        var framer = SideChannelFramer(maximumBodyLength: limit)
        var frames: [[UInt8]] = []
        var failure: WeheWireError?
        var random = UInt32(input[0]) &* 2_654_435_761 | 1
        var arrived = 0
        var returned = 0
        feeding: while arrived < stream.count {
            random = random &* 1_103_515_245 &+ 12345
            let chunk = input[0] == 0 ? stream.count : 1 + Int(random >> 16) % 97
            let end = min(stream.count, arrived + chunk)
            framer.append(stream[arrived..<end])
            arrived = end
            do {
                while let frame = try framer.nextFrame() {
                    frames.append(frame)
                    returned += SideChannelFramer.prefixLength + frame.count
                }
            } catch {
                failure = error
                break feeding
            }
            require(
                framer.bufferedByteCount == arrived - returned,
                "bufferedByteCount \(framer.bufferedByteCount), expected \(arrived - returned)")
        }
        require(
            frames == expected.frames,
            "frames differ from the reference reading (\(frames.count) vs \(expected.frames.count))")
        switch (failure, expected.failure) {
        case (nil, nil): break
        case (let got?, let want?):
            require(
                got.code == want.code && got.offset == want.offset,
                "error \(got.code)@\(got.offset ?? -1), reference \(want.code)@\(want.offset ?? -1)")
        default:
            failed(
                "framer error \(failure.map { "\($0)" } ?? "none"), reference \(expected.failure.map { "\($0)" } ?? "none")"
            )
        }

        for frame in frames.prefix(8) {
            var again = SideChannelFramer(maximumBodyLength: limit)
            again.append(SideChannelFramer.frame(frame))
            do {
                let first = try again.nextFrame()
                require(first == frame, "a framed body does not read back as itself")
                require(again.bufferedByteCount == 0, "framing one body left \(again.bufferedByteCount) bytes")
                let second = try again.nextFrame()
                require(second == nil, "a second frame out of one framed body")
            } catch {
                failed("a framed body of \(frame.count) bytes is refused: \(error)")
            }
        }
    }

    /// Reads the whole stream at once: ten ASCII digits, then that many body bytes, until the stream ends, a prefix
    /// is not ten digits (`.invalidValue` at the first non-digit) or a length exceeds the limit (`.tooLarge`).
    static func reference(_ stream: [UInt8], limit: Int) -> (frames: [[UInt8]], failure: WeheWireError?) {
        var frames: [[UInt8]] = []
        var position = 0
        while stream.count - position >= 10 {
            let prefix = stream[position..<(position + 10)]
            if let bad = prefix.firstIndex(where: { $0 < UInt8(ascii: "0") || $0 > UInt8(ascii: "9") }) {
                return (frames, WeheWireError(.invalidValue, "", offset: bad - position))
            }
            guard let length = Int(String(decoding: prefix, as: UTF8.self)) else {
                failed("ten digits are not an integer")
            }
            if length > limit { return (frames, WeheWireError(.tooLarge, "")) }
            guard stream.count - position - 10 >= length else { break }
            frames.append(Array(stream[(position + 10)..<(position + 10 + length)]))
            position += 10 + length
        }
        return (frames, nil)
    }
}
