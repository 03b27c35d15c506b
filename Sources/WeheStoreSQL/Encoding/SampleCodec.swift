package import Foundation
package import WeheCore

/// The stored form of a `ThroughputSeries`: one blob, little-endian, exact (no rounding).
///
/// Layout (all integers and floats little-endian):
/// - byte 0: format tag. `1` = explicit times, `2` = evenly spaced times (`times[i] == Double(i + 1) * d`,
///   checked bit for bit before this form is chosen, so decoding gives back exactly the same values);
/// - bytes 1…4: sample count `n` (UInt32);
/// - tag 2 only: the interval `d` (Float64);
/// - `n` Float64 throughput values (Mbit/s);
/// - tag 1 only: `n` Float64 times (seconds).
///
/// Wehe clients send evenly spaced times (`d, 2d, …`), so a typical replay of 100 samples takes 813 bytes.
package enum SampleCodec {
    static let explicitTimes: UInt8 = 1
    static let evenlySpaced: UInt8 = 2

    /// Encodes a series.
    package static func encode(_ series: ThroughputSeries) -> Data {
        let count = min(series.mbps.count, series.times.count)
        let interval = series.times.first ?? 0
        let even = count > 0 && (0..<count).allSatisfy { series.times[$0] == Double($0 + 1) * interval }
        var data = Data()
        data.reserveCapacity(5 + 8 + count * (even ? 8 : 16))
        data.append(even ? evenlySpaced : explicitTimes)
        appendLittleEndian(UInt32(truncatingIfNeeded: count), to: &data)
        if even { appendLittleEndian(interval.bitPattern, to: &data) }
        for index in 0..<count { appendLittleEndian(series.mbps[index].bitPattern, to: &data) }
        if !even {
            for index in 0..<count { appendLittleEndian(series.times[index].bitPattern, to: &data) }
        }
        return data
    }

    private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    /// Decodes a blob written by `encode(_:)`; `nil` when it is malformed (wrong tag or length).
    package static func decode(_ data: Data) -> ThroughputSeries? {
        data.withUnsafeBytes { raw -> ThroughputSeries? in
            guard raw.count >= 5 else { return nil }
            let tag = raw[0]
            let count = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
            func double(at offset: Int) -> Double {
                Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            }
            switch tag {
            case evenlySpaced:
                guard raw.count == 13 + count * 8 else { return nil }
                let interval = double(at: 5)
                let mbps = (0..<count).map { double(at: 13 + $0 * 8) }
                let times = (0..<count).map { Double($0 + 1) * interval }
                return ThroughputSeries(mbps: mbps, times: times)
            case explicitTimes:
                guard raw.count == 5 + count * 16 else { return nil }
                let mbps = (0..<count).map { double(at: 5 + $0 * 8) }
                let times = (0..<count).map { double(at: 5 + count * 8 + $0 * 8) }
                return ThroughputSeries(mbps: mbps, times: times)
            default:
                return nil
            }
        }
    }
}
