import Foundation
@testable import PortariaCore
import Testing

@Suite("Visit state machine")
struct VisitStateMachineTests {
    static let maria = PersonRef(id: "u-maria", name: "Maria Souza")
    static let joao = PersonRef(id: "u-joao", name: "João Souza")
    static let t = Date(timeIntervalSince1970: 1_800_000_000)
    static let resolution = VisitResolution(action: .authorize, by: maria, at: t, via: .notification)
    static let later = VisitResolution(action: .deny, by: joao, at: t.addingTimeInterval(1), via: .app)

    static let states: [VisitState] = [
        .ringing, .answered(by: maria, at: t), .unanswered(at: t), .resolved(resolution), .cancelled(at: t), .expired(at: t),
    ]
    static let events: [VisitEvent] = [
        .ringStep(userIDs: ["u-maria"]), .answer(by: joao, at: t), .decline(by: joao, at: t), .windowClosed(at: t),
        .resolve(later), .cancel(at: t), .expire(at: t),
    ]

    /// The whole table: every state × every event → new status + actions, or the error.
    enum Outcome: Equatable {
        case ok(VisitStatus, [VisitAction])
        case error(VisitTransitionError)
    }

    static func expected(_ state: VisitState, _ event: VisitEvent) -> Outcome {
        switch (state.status, event) {
        case (.ringing, .ringStep(let users)): return .ok(.ringing, [.ring(userIDs: users)])
        case (.ringing, .answer(let by, _)): return .ok(.answered, [.stopRinging(reason: .answeredElsewhere), .recordAnswer(by)])
        case (.ringing, .decline(let by, _)): return .ok(.ringing, [.recordDecline(by), .advanceRing])
        case (.ringing, .windowClosed): return .ok(.unanswered, [.stopRinging(reason: .timeout), .becamePending])
        case (.ringing, .resolve(let r)): return .ok(.resolved, [.stopRinging(reason: .resolved), .resolved(r)])
        case (.ringing, .cancel): return .ok(.cancelled, [.stopRinging(reason: .cancelled), .cancelled])
        case (.ringing, .expire): return .ok(.expired, [.stopRinging(reason: .expired), .expired])
        case (.answered, .answer), (.answered, .decline): return .error(.alreadyAnswered(by: maria))
        case (.answered, .resolve(let r)), (.unanswered, .resolve(let r)): return .ok(.resolved, [.resolved(r)])
        case (.answered, .cancel), (.unanswered, .cancel): return .ok(.cancelled, [.cancelled])
        case (.answered, .expire), (.unanswered, .expire): return .ok(.expired, [.expired])
        case (.resolved, .answer), (.resolved, .decline), (.resolved, .resolve): return .error(.alreadyResolved(resolution))
        case (let status, let event): return .error(.illegal(from: status, event: event.name))
        }
    }

    @Test("every state × event", arguments: states, events)
    func table(state: VisitState, event: VisitEvent) {
        var machine = VisitMachine(state: state)
        let outcome: Outcome
        do {
            let actions = try machine.handle(event)
            outcome = .ok(machine.state.status, actions)
        } catch {
            outcome = .error(error)
            #expect(machine.state == state, "a refused event leaves the state alone")
        }
        #expect(outcome == Self.expected(state, event))
    }

    @Test("ask_then_concierge: an unanswered delivery is left at the concierge automatically")
    func autoConcierge() throws {
        var machine = VisitMachine(leaveAtConciergeWhenUnanswered: true)
        let actions = try machine.handle(.windowClosed(at: Self.t))
        let auto = VisitResolution(action: .leaveAtConcierge, by: .automatic, at: Self.t, via: .auto)
        #expect(machine.state == .resolved(auto))
        #expect(actions == [.stopRinging(reason: .timeout), .resolved(auto)])
    }

    @Test("terminal statuses")
    func terminal() {
        #expect(VisitStatus.allCases.filter(\.isTerminal) == [.resolved, .cancelled, .expired])
    }

    @Test("the loser reads who decided and when, in the company's time zone")
    func loserText() throws {
        let zone = try #require(TimeZone(identifier: "America/Sao_Paulo"))
        // 2026-11-29 17:32:05Z is 14:32 in São Paulo (UTC−3, no DST since 2019).
        let at = try #require(Timestamp.parse("2026-11-29T17:32:05Z"))
        func text(_ action: ResolutionAction, via: ResolutionChannel = .app) -> String {
            ResolutionText.alreadyResolved(VisitResolution(action: action, by: Self.maria, at: at, via: via), timeZone: zone)
        }
        #expect(text(.authorize) == "Maria já autorizou às 14:32")
        #expect(text(.deny) == "Maria já negou às 14:32")
        #expect(text(.leaveAtConcierge) == "Maria pediu para deixar na portaria às 14:32")
        #expect(text(.leaveAtConcierge, via: .auto) == "Deixado na portaria automaticamente às 14:32")
        #expect(ResolutionText.alreadyAnswered(by: Self.joao, at: at, timeZone: zone) == "João já atendeu às 14:32")
    }
}

@Suite("Geofence")
struct GeofenceTests {
    static let gate = GeoPoint(lat: -23.561684, lon: -46.655981)
    /// Metres per degree of latitude on the mean sphere.
    static let metresPerDegree = Geofence.earthRadius * Double.pi / 180

    static func north(_ metres: Double, accuracy: Double = 10) -> VisitorLocation {
        VisitorLocation(lat: gate.lat + metres / metresPerDegree, lon: gate.lon, accuracyM: accuracy)
    }

    @Test("haversine against known distances")
    func distances() {
        // São Paulo (Praça da Sé) → Rio de Janeiro (Centro): ≈ 361 km.
        let distance = Geofence.distance(from: GeoPoint(lat: -23.5505, lon: -46.6333), to: GeoPoint(lat: -22.9068, lon: -43.1729))
        #expect(abs(distance - 361_000) < 2_000)
        #expect(Geofence.distance(from: Self.gate, to: Self.gate) == 0)
        let one = Geofence.distance(from: Self.gate, to: GeoPoint(lat: Self.north(340).lat, lon: Self.gate.lon))
        #expect(abs(one - 340) < 0.01)
    }

    @Test("a point 340 m away is away and reads A 340m")
    func away340() {
        let result = Geofence.evaluate(location: Self.north(340), gate: Self.gate, radius: 50)
        #expect(result == GeofenceResult(status: .away, distanceM: 340, bearingDeg: 0))
        #expect(result.badge == "⚠ A 340m da portaria")
    }

    @Test("radius plus accuracy, accuracy capped at 100 m, useless beyond 500 m")
    func rule() {
        func status(_ metres: Double, accuracy: Double) -> GeofenceStatus {
            Geofence.evaluate(location: Self.north(metres, accuracy: accuracy), gate: Self.gate, radius: 50).status
        }
        #expect(status(0, accuracy: 5) == .atEntrance)
        #expect(status(49.9, accuracy: 0) == .atEntrance)
        #expect(status(50.5, accuracy: 0) == .away)
        #expect(status(79.5, accuracy: 30) == .atEntrance)
        #expect(status(80.5, accuracy: 30) == .away)
        #expect(status(149.5, accuracy: 400) == .atEntrance)   // capped: 50 + 100
        #expect(status(150.5, accuracy: 400) == .away)
        #expect(status(0, accuracy: 500) == .atEntrance)
        #expect(status(0, accuracy: 500.1) == .unknown)
        #expect(Geofence.evaluate(location: nil, gate: Self.gate, radius: 50) == .unknown)
        #expect(Geofence.evaluate(location: Self.north(0), gate: nil, radius: 50) == .unknown)
        #expect(Geofence.evaluate(location: Self.north(0), gate: Self.gate, radius: 50).badge == "✓ Na entrada")
        #expect(GeofenceResult.unknown.badge == "Localização desconhecida")
    }

    @Test("badge rounding", arguments: [
        (343.0, "340m"), (345.0, "350m"), (12.0, "10m"), (994.0, "990m"), (995.0, "1,0km"), (1_180.0, "1,2km"),
        (1_249.0, "1,2km"), (9_940.0, "9,9km"), (9_960.0, "10km"), (12_400.0, "12km"), (361_000.0, "361km"),
    ])
    func rounding(metres: Double, text: String) {
        #expect(Geofence.formatDistance(metres) == text)
        #expect(GeofenceResult(status: .away, distanceM: Int(metres)).badge == "⚠ A \(text) da portaria")
    }

    @Test("DTO wire names")
    func wire() throws {
        let json = String(decoding: try JSONCoding.encoder().encode(GeofenceResult(status: .atEntrance, distanceM: 12)), as: UTF8.self)
        #expect(json == #"{"distance_m":12,"status":"at_entrance"}"#)
        let location = try JSONCoding.decoder().decode(VisitorLocation.self, from: Data(#"{"lat":1,"lon":2,"accuracy_m":3}"#.utf8))
        #expect(location == VisitorLocation(lat: 1, lon: 2, accuracyM: 3))
    }
}
