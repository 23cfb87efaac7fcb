import PortariaCore

/// How device registration refuses, as a domain case. `DeviceStore` throws it; the router
/// renders it (`RenderableError`), and this conformance is the one place that spells its
/// wire shape (docs/openapi.yaml).
enum DeviceError: RenderableError, Equatable {
    /// The user holds `limit` devices and none of them has an inactive token to make room.
    case limitReached(Int)

    var status: Int { 409 }
    var code: ErrorCode { .deviceLimitReached }

    var message: String {
        switch self {
        case .limitReached(let limit): return "a user may register \(limit) devices; remove one with DELETE /v1/devices/{id}"
        }
    }

    var details: [String: JSONValue] {
        switch self {
        case .limitReached(let limit): return ["limit": .number(Double(limit))]
        }
    }
}
