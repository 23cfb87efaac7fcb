import Foundation

// fuzz/router-path: Router.match (segment split, percent-decoding of parameters,
// backtracking between static segments and parameters) on arbitrary methods and paths,
// and the query arguments' lenient percent-decoding on the same bytes.

let fuzzRouter: Router = {
    let router = Router()
    let handler: HTTPHandler = { _ in HTTPResponse(status: 204) }
    let routes = [
        ("GET", "/healthz"), ("GET", "/v1/openapi.yaml"), ("POST", "/v1/auth/login"), ("POST", "/v1/auth/logout"),
        ("GET", "/v1/me"), ("GET", "/v1/gates/{slug}"), ("POST", "/v1/gates/{slug}/visits"),
        ("GET", "/v1/visitor/visit"), ("POST", "/v1/visitor/visit/photo"), ("POST", "/v1/visitor/visit/voice_message"),
        ("GET", "/v1/visits"), ("GET", "/v1/visits/{id}"), ("POST", "/v1/visits/{id}/resolve"),
        ("GET", "/v1/visits/{id}/photo"), ("GET", "/v1/visits/{id}/voice_message"), ("POST", "/v1/visits/{id}/call/answer"),
        ("GET", "/v1/units/{unit}/settings"), ("PUT", "/v1/units/{unit}/settings"),
        ("POST", "/v1/devices"), ("DELETE", "/v1/devices/{id}"), ("POST", "/v1/push/{id}/ack"),
        ("GET", "/v1/realtime"), ("POST", "/v1/realtime/tickets"), ("GET", "/{file}"), ("GET", "/admin/{page}"),
    ]
    for (method, pattern) in routes { router.add(method, pattern, handler) }
    return router
}()
let fuzzMethods = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouterPath(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let first = bytes.first else { return 0 }
    let method = fuzzMethods[Int(first) % fuzzMethods.count]
    let path = String(decoding: bytes.dropFirst(), as: UTF8.self)
    switch fuzzRouter.match(method: method, path: path) {
    case .found(let route, let parameters, _):
        let routeSegments = route.split(separator: "/").count
        let pathSegments = path.split(separator: "/").count
        invariant(routeSegments == pathSegments, "\(path) matched \(route)")
        invariant(parameters.values.allSatisfy { !$0.isEmpty }, "empty parameter for \(path)")
    case .methodNotAllowed(let allowed):
        invariant(!allowed.isEmpty && !allowed.contains(method), "405 for \(method) allowing \(allowed)")
    case .notFound:
        break
    }
    let decoded = PercentDecoding.decodeLeniently(path)
    invariant(decoded.utf8.count <= path.utf8.count, "decoding \(path) grew it")
    if !path.contains("%") { invariant(decoded == path, "\(path) changed without an escape") }
    if !decoded.contains("\u{FFFD}") {
        let escaped = decoded.utf8.map { String(format: "%%%02X", $0) }.joined()
        invariant(PercentDecoding.decodeLeniently(escaped) == decoded, "\(decoded) does not survive escaping")
    }
    return 0
}
