import Foundation
import PortariaCore

// fuzz/json-request: HTTPRequest.decode (the project's JSONCoding decoder plus its error
// mapping) on arbitrary bodies, for every request DTO of PortariaCore. The first byte
// picks the type. Any body must decode or be refused with a 4xx naming the problem.

func decodeAs<T: Decodable>(_: T.Type, _ request: HTTPRequest) -> T? {
    do {
        return try request.decode(T.self)
    } catch let error as HTTPError {
        invariant((400..<500).contains(error.status), "decoding answered \(error.status): \(error)")
        _ = error.response
        return nil
    } catch {
        invariant(false, "decode threw a non-HTTP error: \(error)")
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let selector = bytes.first else { return 0 }
    let request = HTTPRequest(method: "POST", path: "/", headers: ["content-type": "application/json"],
                              body: Array(bytes.dropFirst()))
    switch selector % 14 {
    case 0:
        // Open JSON (unit settings, device registration and broadcasts read it raw first).
        guard let value = decodeAs(JSONValue.self, request) else { break }
        // What the server writes back (event data, realtime frames) must read back the same.
        let text = value.jsonText
        let again = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(text.utf8))
        invariant(again == value, "JSONValue round trip: \(text.prefix(200))")
        _ = try? JSONCoding.encoder().encode(value)
    case 1: _ = decodeAs(LoginRequest.self, request)
    case 2: _ = decodeAs(OTPSendRequest.self, request)
    case 3: _ = decodeAs(OTPVerifyRequest.self, request)
    case 4: _ = decodeAs(GenerateAccessTokenRequest.self, request)
    case 5: _ = decodeAs(RefreshRequest.self, request)
    case 6: _ = decodeAs(LogoutRequest.self, request)
    case 7: _ = decodeAs(DeviceRegistration.self, request)
    case 8: _ = decodeAs(PushAck.self, request)
    case 9:
        guard let visit = decodeAs(CreateVisitRequest.self, request) else { break }
        // The geofence verdict is computed from the visitor's coordinates.
        _ = Geofence.evaluate(location: visit.location, gate: GeoPoint(lat: -23.56, lon: -46.65), radius: 50)
    case 10: _ = decodeAs(ResolveVisitRequest.self, request)
    case 11: _ = decodeAs(CallActionRequest.self, request)
    case 12: _ = decodeAs(UnitSettings.self, request)
    default:
        _ = decodeAs(CallICE.self, request)
        _ = decodeAs(CallDescription.self, request)
    }
    return 0
}
