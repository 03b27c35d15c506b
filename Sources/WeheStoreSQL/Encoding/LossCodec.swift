package import Foundation
package import WeheStore

/// The stored form of a loss timeline (`ReplayLossRecord.samples`): one blob, little-endian, exact.
///
/// Layout: byte 0 format tag `1`; bytes 1…4 the reading count `n` (UInt32); then `n` readings of three Float64
/// each (time in seconds, bytes sent, bytes lost). A 45-second replay sampled every 10 ms takes at most 108 KB.
package enum LossCodec {
    static let tag: UInt8 = 1

    /// Encodes readings.
    package static func encode(_ samples: [ReplayLossRecord.Sample]) -> Data {
        var data = Data()
        data.reserveCapacity(5 + samples.count * 24)
        data.append(tag)
        append(UInt32(truncatingIfNeeded: samples.count), to: &data)
        for sample in samples {
            append(sample.time.bitPattern, to: &data)
            append(sample.bytesSent.bitPattern, to: &data)
            append(sample.bytesLost.bitPattern, to: &data)
        }
        return data
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    /// Decodes a blob written by `encode(_:)`; `nil` when it is malformed (wrong tag or length).
    package static func decode(_ data: Data) -> [ReplayLossRecord.Sample]? {
        data.withUnsafeBytes { raw -> [ReplayLossRecord.Sample]? in
            guard raw.count >= 5, raw[0] == tag else { return nil }
            let count = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
            guard raw.count == 5 + count * 24 else { return nil }
            func double(at offset: Int) -> Double {
                Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            }
            return (0..<count).map { index in
                let base = 5 + index * 24
                return ReplayLossRecord.Sample(
                    time: double(at: base), bytesSent: double(at: base + 8), bytesLost: double(at: base + 16))
            }
        }
    }
}
