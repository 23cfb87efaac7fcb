import CMicroHTTPD
import Foundation
import PortariaCore

// The C callbacks libmicrohttpd calls on its own threads. They live here, as
// non-isolated free functions, because a callback defined in main.swift would be
// MainActor-isolated and trap at the isolation check on a libmicrohttpd thread.

/// Per-request state, created when the headers arrive and released when libmicrohttpd
/// reports the request complete. Only one party touches it at a time: the libmicrohttpd
/// thread until the connection is suspended, the handler task until it resumes it.
final class RequestContext: @unchecked Sendable {
    // Unchecked: one owner at a time, handed over by suspend/resume (see above).
    let server: HTTPServer
    var request: HTTPRequest
    let startedAt = ContinuousClock.now
    var declaredLength: Int?
    var discardedBytes = 0
    var bodyTooLarge = false
    /// Body bytes this request holds against the server-wide budget (released when it completes).
    var reservedBodyBytes = 0
    /// The budget refused this request's bytes: the body is discarded and the answer is 503.
    var overBudget = false
    /// The client address as the body budget counts it (`AddressKey`: IPv6 by its /64).
    let budgetAddress: String
    /// The connection's entry in `HTTPServer.deadlines` (0: not tracked).
    var connectionID: UInt = 0
    var maxBodySize = 0
    var response: HTTPResponse?
    var handlerStarted = false
    var route = "-"
    var status = 0

    init(server: HTTPServer, request: HTTPRequest) {
        self.server = server
        self.request = request
        budgetAddress = request.limitAddress
    }
}

/// libmicrohttpd's connection pointer, carried into the handler task to resume it.
struct ConnectionHandle: @unchecked Sendable {
    // Unchecked: only passed to MHD_resume_connection, which libmicrohttpd allows from any thread.
    let pointer: OpaquePointer
}

/// Headers (names lowercased) or query arguments (percent-decoded here: libmicrohttpd
/// leaves escapes alone, see `portaria_mhd_keep_escapes`).
private func collectValues(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
    final class Box {
        var values: [String: String] = [:]
        let lower: Bool
        let decode: Bool
        init(_ lower: Bool, decode: Bool) { self.lower = lower; self.decode = decode }
    }
    let box = Box(lowercased, decode: kind == portaria_mhd_get_argument_kind)
    _ = withExtendedLifetime(box) {
        MHD_get_connection_values(connection, kind, { cls, _, key, value in
            let box = Unmanaged<Box>.fromOpaque(cls!).takeUnretainedValue()
            if let key {
                var name = String(cString: key)
                var text = value.map { String(cString: $0) } ?? ""
                if box.decode {
                    name = PercentDecoding.decodeLeniently(name)
                    text = PercentDecoding.decodeLeniently(text)
                }
                let finalName = box.lower ? name.lowercased() : name
                // Repeated headers are joined as RFC 9110 §5.3 allows.
                if let existing = box.values[finalName] { box.values[finalName] = existing + ", " + text }
                else { box.values[finalName] = text }
            }
            return portaria_mhd_yes
        }, Unmanaged.passUnretained(box).toOpaque())
    }
    return box.values
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
    context.status = response.status
    let mhdResponse: OpaquePointer? = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                        portaria_mhd_respmem_must_copy)
    }
    guard let mhdResponse else { return portaria_mhd_no }
    defer { MHD_destroy_response(mhdResponse) }
    for (name, value) in response.headers { _ = MHD_add_response_header(mhdResponse, name, value) }
    // Every answer, JSON and errors included: a browser never guesses another type (and
    // runs it) from the bytes of an answer.
    if response.header("X-Content-Type-Options") == nil {
        _ = MHD_add_response_header(mhdResponse, "X-Content-Type-Options", "nosniff")
    }
    _ = MHD_add_response_header(mhdResponse, "X-Request-Id", context.request.requestID)
    return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
}

/// Holds what the upgrade callback needs; retained until that callback runs.
private final class UpgradeBox {
    let upgrade: any WebSocketUpgrade
    let server: HTTPServer
    /// The connection's entry in `HTTPServer.deadlines` and `HTTPServer.sockets`.
    let connectionID: UInt
    init(_ upgrade: any WebSocketUpgrade, server: HTTPServer, connectionID: UInt) {
        self.upgrade = upgrade
        self.server = server
        self.connectionID = connectionID
    }
}

// Unchecked: only passed to MHD_upgrade_action, which libmicrohttpd allows from any thread.
private struct UpgradeHandle: @unchecked Sendable { let pointer: OpaquePointer }

private func queueUpgrade(_ response: HTTPResponse, _ upgrade: any WebSocketUpgrade,
                          on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
    let id = context.connectionID
    if let refusal = context.server.upgradeRefusal(id) {
        return queue(refusal, on: connection, context: context)
    }
    context.status = 101
    // The socket becomes the WebSocket's: no head or body deadline applies to it any more.
    context.server.deadlines.withLock { $0.upgraded(id) }
    let box = Unmanaged.passRetained(UpgradeBox(upgrade, server: context.server, connectionID: id)).toOpaque()
    guard let mhdResponse = MHD_create_response_for_upgrade({ cls, _, _, extraIn, extraInSize, socket, urh in
        let box = Unmanaged<UpgradeBox>.fromOpaque(cls!).takeRetainedValue()
        var buffered: [UInt8] = []
        if let extraIn, extraInSize > 0 {
            buffered = Array(UnsafeRawBufferPointer(start: extraIn, count: extraInSize))
        }
        let handle = UpgradeHandle(pointer: urh!)
        let server = box.server
        server.upgradeOpened()
        let released = Locked(false)
        let handBack: @Sendable () -> Void = {
            guard !released.withLock({ done in defer { done = true }; return done }) else { return }
            server.releaseUpgrade { _ = portaria_mhd_upgrade_close(handle.pointer) }
        }
        // libmicrohttpd keeps an upgraded connection — its struct and its whole memory pool
        // (`headerMemoryLimit`, 16 KiB) — until the socket is handed back: two thirds of
        // an idle WebSocket. So the WebSocket gets a descriptor of its own for the same
        // socket, and libmicrohttpd's connection is handed back at once (from another
        // thread: this callback runs inside libmicrohttpd's upgrade). libmicrohttpd then
        // closes only its own number: with MHD_USE_TURBO it does not shut the socket down
        // first, and a suspended connection is out of its epoll set. The socket lives until
        // the WebSocket closes its descriptor.
        let own = server.duplicateDescriptor(socket)
        guard own >= 0 else {
            let reason = String(cString: strerror(errno))
            // No spare descriptor: the process is at its open-file limit, and a WebSocket
            // kept on libmicrohttpd's descriptor would hold its connection and pool for its
            // whole life. The 101 is sent already, so the refusal is a close frame, 1013
            // "try again later" (best effort: a fresh socket's buffer takes four bytes);
            // libmicrohttpd closes its descriptor when the connection is handed back, and
            // its close uncounts the socket.
            let closeFrame: [UInt8] = [0x88, 0x02, 0x03, 0xF5]
            _ = closeFrame.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            server.log.warning("websocket refused: no spare descriptor", ["error": .string(reason)])
            Task.detached { handBack() }
            return
        }
        // Counted as one socket since its accept: from now the WebSocket's close uncounts it.
        let address = server.sockets.withLock { $0.handedOver(box.connectionID) }
        let closed = Locked(false)
        box.upgrade.upgraded(socket: own, bufferedInput: buffered, close: {
            guard !closed.withLock({ done in defer { done = true }; return done }) else { return }
            _ = close(own)
            if let address { server.sockets.withLock { $0.released(address: address) } }
        })
        Task.detached { handBack() }
    }, box) else {
        Unmanaged<UpgradeBox>.fromOpaque(box).release()
        return portaria_mhd_no
    }
    defer { MHD_destroy_response(mhdResponse) }
    for (name, value) in response.headers { _ = MHD_add_response_header(mhdResponse, name, value) }
    return MHD_queue_response(connection, 101, mhdResponse)
}

func portariaAccessHandler(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
    uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>?,
    contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let contextSlot, let uploadDataSize else { return portaria_mhd_no }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()

    // First call: the request line and headers are in.
    guard let existing = contextSlot.pointee else {
        let headers = collectValues(connection, portaria_mhd_header_kind, lowercased: true)
        let query = collectValues(connection, portaria_mhd_get_argument_kind, lowercased: false)
        let clientRequestID = headers["x-request-id"].flatMap { id in
            id.count <= 64 && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } ? id : nil
        }
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET",
            path: url.map { String(cString: $0) } ?? "/",
            query: query, headers: headers,
            requestID: clientRequestID ?? UUID().uuidString,
            clientAddress: server.configuration.trustedProxies.clientAddress(
                peer: SocketAddress.describe(portaria_mhd_client_address(connection)), forwardedFor: headers["x-forwarded-for"]))
        let context = RequestContext(server: server, request: request)
        context.connectionID = connectionID(connection)
        context.maxBodySize = max(server.configuration.maxBodySize,
                                  server.configuration.bodyLimitOverride(request.method, request.path) ?? 0)
        server.inFlight.withLock { $0 += 1 }
        contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
        if let refusal = ambiguousFraming(headers) {
            // Refused, not guessed (RFC 9112 §6.1, §6.3): the bytes after this head cannot
            // be told apart from a next request, so the connection is closed after the 400
            // and nothing more on it is read. libmicrohttpd closes after an answer queued
            // before the body, and `Connection: close` says so to the client.
            var answer = HTTPError.invalidRequest(refusal).response
            answer.headers.append(("Connection", "close"))
            server.deadlines.withLock { $0.requestComplete(context.connectionID) }
            return queue(answer, on: connection, context: context)
        }
        let chunked = headers["transfer-encoding"] != nil
        let declaresBody = chunked || (headers["content-length"].flatMap(Int.init) ?? 0) > 0
        server.deadlines.withLock { $0.headReceived(context.connectionID, expectsBody: declaresBody, at: .now) }
        if let length = headers["content-length"].flatMap(Int.init) {
            context.declaredLength = length
            if length > context.maxBodySize {
                // A client that waits for "100 Continue" hears the 413 before sending any
                // body, and so does one whose body is beyond what we would ever drain:
                // libmicrohttpd then skips the 100 and closes instead of swallowing it.
                // Anyone else (Python urllib, many mobile stacks) writes the whole body
                // before reading: answering now and closing with its bytes unread makes the
                // kernel send a reset, and the client sees "connection reset" instead of
                // the 413. So read and discard the body, bounded, and answer when it is in.
                let waitsForContinue = headers["expect"]?.lowercased().contains("100-continue") == true
                if waitsForContinue || length > BodyDrain.byteLimit(forBodyLimit: context.maxBodySize) {
                    server.deadlines.withLock { $0.requestComplete(context.connectionID) }
                    return queue(payloadTooLarge(context.maxBodySize), on: connection, context: context)
                }
                context.bodyTooLarge = true
                return portaria_mhd_yes
            }
            // Reserve what a small body needs, not what the client claims: a declared
            // length costs memory only as its bytes arrive (the array grows as they do).
            // The budget is claimed by the bytes as they come (decision 0060), never by
            // the declared length: announcing 1 MiB and sending one byte holds one byte.
            context.request.body.reserveCapacity(min(max(length, 0), 64 * 1024))
        }
        return portaria_mhd_yes
    }
    let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()

    // Body bytes.
    let size = uploadDataSize.pointee
    if size > 0 {
        // A body slower than the minimum rate is dropped at its next byte (the sweep
        // closes one that sends nothing at all).
        let onTime = server.deadlines.withLock { $0.bodyReceived(context.connectionID, count: size, at: .now) }
        guard onTime else { return portaria_mhd_no }
        if !context.bodyTooLarge && context.request.body.count + size > context.maxBodySize {
            context.bodyTooLarge = true
            context.request.body = []
        }
        if !context.bodyTooLarge && !context.overBudget {
            if server.reserveBodyBytes(size, for: context.budgetAddress) {
                context.reservedBodyBytes += size
            } else {
                context.overBudget = true
                server.releaseBodyBytes(context.reservedBodyBytes, for: context.budgetAddress)
                context.reservedBodyBytes = 0
                context.request.body = []
            }
        }
        if context.bodyTooLarge || context.overBudget {
            context.discardedBytes += size
            // A chunked upload that keeps going past the drain allowance, or a body that
            // trickles in for too long, is dropped outright: memory was never at stake
            // (nothing is kept), the connection's time and bandwidth are.
            if context.discardedBytes > BodyDrain.byteLimit(forBodyLimit: context.maxBodySize)
                || ContinuousClock.now - context.startedAt > BodyDrain.timeLimit {
                return portaria_mhd_no
            }
        } else if let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                context.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
            }
        }
        uploadDataSize.pointee = 0
        return portaria_mhd_yes
    }

    // The request is complete.
    server.deadlines.withLock { $0.requestComplete(context.connectionID) }
    if context.bodyTooLarge { return queue(payloadTooLarge(context.maxBodySize), on: connection, context: context) }
    if context.overBudget {
        var busy = HTTPError(status: 503, code: .serviceUnavailable,
                             message: "the server is receiving too many uploads at once; try again shortly")
        busy.headers = [("Retry-After", "5")]
        return queue(busy.response, on: connection, context: context)
    }
    if let response = context.response {
        if let upgrade = response.upgrade {
            return queueUpgrade(response, upgrade, on: connection, context: context)
        }
        return queue(response, on: connection, context: context)
    }
    guard !context.handlerStarted else { return portaria_mhd_yes }
    context.handlerStarted = true
    // A WebSocket handshake the limits would refuse anyway is refused before its handler
    // runs (no ticket spent, no database read); `queueUpgrade` checks again when it answers.
    if context.request.headers["upgrade"]?.lowercased().contains("websocket") == true,
       let refusal = server.upgradeRefusal(context.connectionID) {
        return queue(refusal, on: connection, context: context)
    }
    let handle = ConnectionHandle(pointer: connection)
    guard server.suspending(context, handle) else {
        return queue(HTTPError(status: 503, code: .serviceUnavailable, message: "the server is shutting down").response,
                     on: connection, context: context)
    }
    MHD_suspend_connection(connection)
    Task {
        let (response, route) = await server.respond(to: context.request)
        server.handlerFinished(context, response: response, route: route)
    }
    return portaria_mhd_yes
}

/// How much of an oversized body the server reads and throws away so that a client
/// which writes its whole body before reading still receives the 413 (a lingering close,
/// done in the access handler because libmicrohttpd has none).
enum BodyDrain {
    /// Four times the route's limit: an honest client that misjudged the size by a few
    /// megabytes gets its answer; an endless or huge upload is cut off early.
    static func byteLimit(forBodyLimit limit: Int) -> Int {
        let (product, overflow) = limit.multipliedReportingOverflow(by: 4)
        return overflow ? Int.max : product
    }

    /// Draining stops after this long even within the byte allowance (a trickling sender).
    static let timeLimit: Duration = .seconds(10)
}

/// Why a request's body framing is ambiguous, or nil when it is not: repeated
/// `Content-Length` headers (they reach us joined: "5, 7"; libmicrohttpd would frame by the
/// first), `Transfer-Encoding` together with `Content-Length` (a proxy in front may frame
/// by the other one: request smuggling), or a transfer coding other than plain `chunked`,
/// the only one libmicrohttpd decodes.
func ambiguousFraming(_ headers: [String: String]) -> String? {
    if let declared = headers["content-length"], Int(declared) == nil {
        return "conflicting Content-Length headers"
    }
    guard let coding = headers["transfer-encoding"] else { return nil }
    if headers["content-length"] != nil {
        return "a request may not have both Content-Length and Transfer-Encoding"
    }
    if coding.trimmingCharacters(in: .whitespaces).lowercased() != "chunked" {
        return "unsupported Transfer-Encoding; only chunked is accepted"
    }
    return nil
}

private func payloadTooLarge(_ limit: Int) -> HTTPResponse {
    HTTPError(status: 413, code: .payloadTooLarge,
              message: "the request body exceeds \(limit) bytes").response
}

func portariaRequestCompleted(
    cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
    contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, reason: MHD_RequestTerminationCode
) {
    guard let contextSlot, let raw = contextSlot.pointee else { return }
    contextSlot.pointee = nil
    let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
    context.server.inFlight.withLock { $0 -= 1 }
    context.server.releaseBodyBytes(context.reservedBodyBytes, for: context.budgetAddress)
    context.reservedBodyBytes = 0
    // A kept-alive connection owes its next head from now.
    context.server.deadlines.withLock { $0.answered(context.connectionID, at: .now) }
    let elapsed = ContinuousClock.now - context.startedAt
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    var fields: [String: JSONValue] = [
        "request_id": .string(context.request.requestID),
        "method": .string(context.request.method),
        "route": .string(context.route),
        "status": .number(Double(context.status)),
        "latency_ms": .number((milliseconds * 1000).rounded() / 1000),
    ]
    context.server.configuration.metrics?.requestCompleted(method: context.request.method, route: context.route,
                                                           status: context.status, seconds: milliseconds / 1000)
    let code = portaria_mhd_termination_code(reason)
    if code != 0 { fields["termination"] = .string(terminationReason(code)) }
    context.server.log.write(context.server.configuration.requestLogLevel, "request", fields)
}

/// libmicrohttpd's `MHD_RequestTerminationCode` values (stable since 0.9).
private func terminationReason(_ code: Int32) -> String {
    switch code {
    case 1: return "error"
    case 2: return "timeout"
    case 3: return "shutdown"
    case 4: return "read_error"
    case 5: return "client_abort"
    default: return "other"
    }
}

/// libmicrohttpd's own diagnostics (malformed requests it rejected itself, etc.).
func portariaLibraryLog(_ message: UnsafePointer<CChar>?) {
    guard let message else { return }
    let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    Log.shared.warning("http", ["detail": .string(text)])
}
