public import Foundation

/// Whether the connection is metered, as NetworkManager says.
public enum MeteredState: Sendable, Hashable {
    /// A connected device is metered (NetworkManager's `yes` or `yes (guessed)`), named.
    case metered(String)
    /// Every connected device is not metered.
    case notMetered
    /// Not known (NetworkManager absent or silent); counted as not metered, with the reason said in status.
    case unknown(String)

    /// Parses `nmcli -t -f GENERAL.DEVICE,GENERAL.STATE,GENERAL.METERED device show`: one block per device, lines
    /// `GENERAL.DEVICE:wlan0`, `GENERAL.STATE:100 (connected)`, `GENERAL.METERED:yes (guessed)`. Only connected
    /// devices count (state 100); a device without a state line counts.
    public static func parseNetworkManager(_ output: String) -> MeteredState {
        var device = ""
        var connected = true
        var sawAny = false
        var metered: String?
        func close(_ value: String?) {
            guard let value else { return }
            sawAny = true
            if connected, value.hasPrefix("yes"), metered == nil { metered = device.isEmpty ? "a device" : device }
        }
        var pendingMetered: String?
        for line in output.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = line[..<colon]
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            switch key {
            case "GENERAL.DEVICE":
                close(pendingMetered)
                pendingMetered = nil
                device = value
                connected = true
            case "GENERAL.STATE": connected = value.hasPrefix("100")
            case "GENERAL.METERED": pendingMetered = value
            default: continue
            }
        }
        close(pendingMetered)
        if let metered { return .metered(metered) }
        return sawAny ? .notMetered : .unknown("NetworkManager reported no device")
    }
}

/// A battery's charge and whether it is charging (`/sys/class/power_supply/<name>/capacity` and `status`).
public struct BatteryState: Sendable, Hashable {
    public var name: String
    /// Charge, percent.
    public var percent: Int
    /// Whether it is on mains (charging, full, or plugged in and not charging).
    public var onMains: Bool

    public init(name: String, percent: Int, onMains: Bool) {
        self.name = name
        self.percent = percent
        self.onMains = onMains
    }

    /// The batteries under a power-supply tree (`/sys/class/power_supply`; a directory of fakes in tests): the
    /// entries whose `type` is `Battery` and whose `capacity` reads as a number. No battery: an empty list.
    public static func read(root: String = "/sys/class/power_supply") -> [BatteryState] {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: root) else { return [] }
        func text(_ path: String) -> String? {
            guard let data = manager.contents(atPath: path) else { return nil }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return names.sorted().compactMap { name in
            let base = root + "/" + name
            guard text(base + "/type") == "Battery", let capacity = text(base + "/capacity").flatMap({ Int($0) })
            else { return nil }
            let status = text(base + "/status") ?? "Unknown"
            return BatteryState(name: name, percent: capacity, onMains: status != "Discharging")
        }
    }
}

/// The conditions under which a scheduled run may start: not on a metered connection (unless allowed), not on a
/// battery below `minimumBatteryPercent` that is not charging, not in quiet hours.
public struct MonitorGuards: Sendable, Hashable {
    public var allowMetered: Bool
    public var minimumBatteryPercent: Int
    public var quietHours: QuietHours?

    public init(allowMetered: Bool = false, minimumBatteryPercent: Int = 20, quietHours: QuietHours? = nil) {
        self.allowMetered = allowMetered
        self.minimumBatteryPercent = minimumBatteryPercent
        self.quietHours = quietHours
    }

    /// What each guard says now.
    public struct Report: Sendable, Hashable {
        /// Why a run may not start now (empty: it may).
        public var blocked: [String]
        /// Each guard's state in one phrase, for `status`.
        public var states: [String: String]
        public var mayRun: Bool { blocked.isEmpty }
    }

    /// Checks the guards at `now` with the given sources' readings.
    public func check(now: Date, calendar: Calendar, metered: MeteredState, batteries: [BatteryState]) -> Report {
        var blocked: [String] = []
        var states: [String: String] = [:]
        switch metered {
        case .metered(let device):
            states["metered"] = "metered (\(device))" + (allowMetered ? ", allowed" : "")
            if !allowMetered {
                blocked.append("the connection is metered (\(device)); --allow-metered runs on it anyway")
            }
        case .notMetered: states["metered"] = "not metered"
        case .unknown(let reason): states["metered"] = "unknown, counted as not metered (\(reason))"
        }
        if let low = batteries.first(where: { !$0.onMains && $0.percent < minimumBatteryPercent }) {
            states["battery"] = "\(low.name) at \(low.percent) %, not charging"
            blocked.append("the battery is at \(low.percent) % and not charging (below \(minimumBatteryPercent) %)")
        } else if let battery = batteries.first {
            states["battery"] = "\(battery.name) at \(battery.percent) %" + (battery.onMains ? ", on mains" : "")
        } else {
            states["battery"] = "no battery"
        }
        if let quietHours {
            let quiet = quietHours.contains(now, calendar: calendar)
            states["quietHours"] = "\(quietHours)" + (quiet ? " (now quiet)" : "")
            if quiet { blocked.append("quiet hours \(quietHours)") }
        } else {
            states["quietHours"] = "none"
        }
        return Report(blocked: blocked, states: states)
    }
}

/// A monitored app's verdict that changed since its previous monitored verdict on the same provider.
public struct VerdictChange: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case newlyThrottled = "newly-throttled"
        case noLongerThrottled = "no-longer-throttled"
    }

    public var kind: Kind
    public var test: String
    public var provider: String
    public var previous: String
    public var current: String

    /// The change from `previous` to `current` (verdicts' raw values); only a conclusive verdict that differs
    /// from the previous conclusive one is a change (an inconclusive run says nothing new).
    public static func between(
        previous: String?, current: String, test: String, provider: String
    ) -> VerdictChange? {
        let differentiation = "differentiation"
        let none = "no-differentiation"
        guard let previous, previous != current else { return nil }
        if previous == none, current == differentiation {
            return VerdictChange(
                kind: .newlyThrottled, test: test, provider: provider, previous: previous, current: current)
        }
        if previous == differentiation, current == none {
            return VerdictChange(
                kind: .noLongerThrottled, test: test, provider: provider, previous: previous, current: current)
        }
        return nil
    }

    /// One line for the journal and the notification.
    public var line: String {
        switch kind {
        case .newlyThrottled:
            return "wehe monitor: \(test) is now differentiated on \(provider) (previously \(previous))"
        case .noLongerThrottled:
            return "wehe monitor: \(test) is no longer differentiated on \(provider) (previously \(previous))"
        }
    }
}
