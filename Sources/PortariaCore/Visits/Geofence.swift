import Foundation

/// A point on Earth in decimal degrees (WGS 84).
public struct GeoPoint: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }
}

/// Where the visitor's browser says it is, with the browser's own accuracy radius.
public struct VisitorLocation: Sendable, Equatable, Codable {
    public var lat: Double
    public var lon: Double
    public var accuracyM: Double

    enum CodingKeys: String, CodingKey {
        case lat, lon
        case accuracyM = "accuracy_m"
    }
}

/// How the visitor's position relates to the gate.
public enum GeofenceStatus: String, Sendable, Codable, CaseIterable {
    case atEntrance = "at_entrance"
    case away
    case unknown
}

/// The geofence verdict shown on the call screen: `{status, distance_m}`.
public struct GeofenceResult: Sendable, Equatable, Codable {
    public var status: GeofenceStatus
    /// Whole metres from the gate; nil when the position is unknown.
    public var distanceM: Int?
    /// Where the visitor was, seen from the gate: whole degrees clockwise from true north
    /// (0–359); nil when the position is unknown (or no longer kept: retention deletes
    /// visitor locations, the distance stays).
    public var bearingDeg: Int?

    enum CodingKeys: String, CodingKey {
        case status
        case distanceM = "distance_m"
        case bearingDeg = "bearing_deg"
    }

    public init(status: GeofenceStatus, distanceM: Int?, bearingDeg: Int? = nil) {
        self.status = status
        self.distanceM = distanceM
        self.bearingDeg = bearingDeg
    }

    public static let unknown = GeofenceResult(status: .unknown, distanceM: nil)

    /// The pt-BR badge of the call screen (see `Geofence.badge`).
    public var badge: String { Geofence.badge(self) }
}

/// The geofence rule: someone ringing from far away is the most useful security signal
/// on the call screen, so the rule is explicit and shared by server and app.
public enum Geofence {
    /// Mean Earth radius (IUGG), metres.
    public static let earthRadius = 6_371_008.8
    /// Accuracy counts in the visitor's favour only up to this much, so a vague fix
    /// cannot stretch the gate's radius indefinitely.
    public static let maximumAccuracyAllowance = 100.0
    /// A fix vaguer than this says nothing about where the visitor is.
    public static let maximumUsableAccuracy = 500.0

    /// Great-circle distance in metres (haversine).
    public static func distance(from a: GeoPoint, to b: GeoPoint) -> Double {
        let radians = Double.pi / 180
        let dLat = (b.lat - a.lat) * radians
        let dLon = (b.lon - a.lon) * radians
        let h = sin(dLat / 2) * sin(dLat / 2)
            + cos(a.lat * radians) * cos(b.lat * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, sqrt(h)))
    }

    /// Initial great-circle bearing from `a` to `b`, whole degrees clockwise from true
    /// north in 0...359; nil for the same point or a non-finite coordinate.
    public static func bearing(from a: GeoPoint, to b: GeoPoint) -> Int? {
        let radians = Double.pi / 180
        let φ1 = a.lat * radians, φ2 = b.lat * radians, Δλ = (b.lon - a.lon) * radians
        let y = sin(Δλ) * cos(φ2)
        let x = cos(φ1) * sin(φ2) - sin(φ1) * cos(φ2) * cos(Δλ)
        guard y.isFinite, x.isFinite, x != 0 || y != 0 else { return nil }
        let degrees = (atan2(y, x) / radians).rounded()
        return (Int(degrees) % 360 + 360) % 360
    }

    /// `at_entrance` when distance ≤ radius + min(accuracy, 100 m); `away` otherwise;
    /// `unknown` without a location, without a gate position, or with accuracy > 500 m.
    public static func evaluate(location: VisitorLocation?, gate: GeoPoint?, radius: Double) -> GeofenceResult {
        guard let location, let gate, location.accuracyM.isFinite, location.accuracyM >= 0,
              location.accuracyM <= maximumUsableAccuracy else { return .unknown }
        // The server validates coordinates first; this keeps `Int(_:)` below from ever
        // trapping (or answering nonsense) on a coordinate that reached here some other way.
        guard location.lat.isFinite, location.lon.isFinite else { return .unknown }
        let point = GeoPoint(lat: location.lat, lon: location.lon)
        let distance = self.distance(from: point, to: gate)
        guard distance.isFinite else { return .unknown }
        let allowance = radius + min(location.accuracyM, maximumAccuracyAllowance)
        return GeofenceResult(status: distance <= allowance ? .atEntrance : .away,
                              distanceM: Int(distance.rounded()),
                              bearingDeg: bearing(from: gate, to: point))
    }

    /// pt-BR badge: `✓ Na entrada`, `⚠ A 340m da portaria`, `⚠ A 1,2km da portaria`,
    /// `Localização desconhecida`.
    ///
    /// Rounding rule: below 1 km the distance is rounded to the nearest 10 m (a GPS fix
    /// is not better than that, and "A 343m" suggests a precision nobody has); from 1 km
    /// on it is shown in km with one decimal and a decimal comma (`1,2km`), and from
    /// 10 km on in whole km (`12km`). 995 m therefore reads `1,0km`, never `1000m`.
    public static func badge(_ result: GeofenceResult) -> String {
        switch result.status {
        case .atEntrance: return "✓ Na entrada"
        case .unknown: return "Localização desconhecida"
        case .away: return "⚠ A \(formatDistance(Double(result.distanceM ?? 0))) da portaria"
        }
    }

    /// `340m`, `1,2km`, `12km` (see `badge`).
    public static func formatDistance(_ metres: Double) -> String {
        let tens = (metres / 10).rounded() * 10
        if tens < 1000 { return "\(Int(max(tens, 10)))m" }
        let tenths = (metres / 100).rounded() / 10
        if tenths < 10 {
            let whole = Int(tenths)
            let decimal = Int((tenths * 10).rounded()) % 10
            return "\(whole),\(decimal)km"
        }
        return "\(Int((metres / 1000).rounded()))km"
    }
}
