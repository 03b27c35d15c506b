internal import WeheWire

/// Load time of an IP-to-AS table the size of a full RouteViews file: `lines` generated routes (90 % IPv4 of
/// lengths 8…24, 10 % IPv6 of lengths 19…48, one in 200 multi-origin), a names file of 100 000 ASes, then
/// the time of one million lookups.
func runASTableBenchmark(lines: Int) {
    var generator = SystemRandomNumberGenerator()
    var prefixes: [UInt8] = []
    prefixes.reserveCapacity(lines * 24)
    for index in 0..<lines {
        let asn = UInt32.random(in: 1...400_000, using: &generator)
        let origin = index % 200 == 0 ? "\(asn)_\(asn + 1)" : "\(asn)"
        let line: String
        if index % 10 == 9 {
            let length = Int.random(in: 19...48, using: &generator)
            let a = String(UInt16.random(in: 0x2000...0x2fff, using: &generator), radix: 16)
            let b = String(UInt16.random(in: 0...0xffff, using: &generator), radix: 16)
            let c = String(UInt16.random(in: 0...0xffff, using: &generator), radix: 16)
            line = "\(a):\(b):\(c)::\t\(length)\t\(origin)\n"
        } else {
            let length = Int.random(in: 8...24, using: &generator)
            let value = UInt32.random(in: 0x0100_0000...0xdfff_ffff, using: &generator) & ~UInt32(0) << (32 - length)
            line = "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)\t\(length)\t\(origin)\n"
        }
        prefixes.append(contentsOf: line.utf8)
    }
    var names: [UInt8] = []
    for asn in 1...100_000 { names.append(contentsOf: "\(asn)\tExample Network \(asn)\n".utf8) }
    print("as-table: \(lines) prefix lines (\(prefixes.count / 1_000_000) MB), 100000 names")
    let start = monotonicSeconds()
    let table = ASTable(prefixes: prefixes, names: names)
    let loaded = monotonicSeconds() - start
    print("  load: \(fixed(loaded, 2)) s, \(table.report)")
    print("  peak resident memory: \(fixed(peakResidentMiB(), 0)) MiB")
    let addresses = (0..<1_000_000).map { _ in IPAddressBits.v4(UInt32.random(in: 0...UInt32.max, using: &generator)) }
    let lookupStart = monotonicSeconds()
    var found = 0
    for address in addresses where table.lookup(address) != nil { found += 1 }
    let lookups = monotonicSeconds() - lookupStart
    print("  1000000 IPv4 lookups: \(fixed(lookups, 2)) s (\(found) found)")
}
