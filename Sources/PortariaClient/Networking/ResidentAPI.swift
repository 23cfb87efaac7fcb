import Foundation
import PortariaCore

/// The typed REST calls the screens need, built from the route catalogue and carried by
/// the session (a 401 refreshes once) through `AuthorizedHTTP.send`, the same road as
/// `APIClient.send`. Non-2xx answers throw `APIClientError`.
public struct ResidentAPI: Sendable {
    let http: any AuthorizedHTTP

    public init(http: any AuthorizedHTTP) { self.http = http }

    public func me() async throws -> MeResponse { try await http.send(APIRoutes.me.endpoint) }
    public func visit(_ id: String) async throws -> Visit { try await http.send(APIRoutes.visit(id: id)) }
    public func unitSettings(_ unitID: String) async throws -> UnitSettingsResponse {
        try await http.send(APIRoutes.unitSettings(unitID: unitID))
    }
    public func updateUnitSettings(_ unitID: String, _ settings: UnitSettings) async throws -> UnitSettingsResponse {
        try await http.send(APIRoutes.updateUnitSettings(unitID: unitID), settings)
    }
    public func devices() async throws -> [DeviceView] { try await http.send(APIRoutes.devices.endpoint).devices }
    public func deleteDevice(_ id: String) async throws { _ = try await http.send(APIRoutes.deleteDevice(id: id)) }

    /// A media file of a visit (`VisitDetailState.photoURL`, `voiceMessageURL`) with the
    /// session's bearer. Only URLs on the server's own origin reach here (the state drops
    /// others), so the bearer never leaves for another host; the path the server gave is sent as is.
    public func media(_ url: URL) async throws -> Data {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true), !components.percentEncodedPath.isEmpty else {
            throw APIClientError.unexpected(status: 0)
        }
        let request = ClientHTTPRequest(method: "GET", path: components.percentEncodedPath, query: components.queryItems ?? [])
        return try await http.send(request, as: Data.self)
    }
}
