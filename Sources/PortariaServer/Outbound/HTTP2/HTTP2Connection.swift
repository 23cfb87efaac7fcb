import CNghttp2
import Foundation
import PortariaCore

/// One request from `send` to its answer. Touched only by the client's I/O thread once
/// it has been handed over.
final class HTTP2Exchange {
    let request: OutboundRequest
    let origin: Origin
    let path: String
    let deadline: ContinuousClock.Instant
    private var completion: ((Result<OutboundResponse, any Error>) -> Void)?
    /// Connections this request has been put on; bounded so that a peer refusing every
    /// stream cannot keep it cycling.
    var attempts = 0
    /// Set once its HEADERS frame left: from then on the peer may have acted on it, and
    /// it is never sent again (no duplicate push).
    var headersSent = false
    var bodyOffset = 0
    /// The peer ended its side of the stream: the answer is whole, whatever reset follows.
    var responseComplete = false
    /// What has arrived of the answer.
    var response = HTTP2ResponseParts()

    init(request: OutboundRequest, origin: Origin, path: String, deadline: ContinuousClock.Instant,
         completion: @escaping (Result<OutboundResponse, any Error>) -> Void) {
        self.request = request
        self.origin = origin
        self.path = path
        self.deadline = deadline
        self.completion = completion
    }

    var isFinished: Bool { completion == nil }

    /// Hands the caller its answer once; later calls do nothing.
    func finish(_ result: Result<OutboundResponse, any Error>) {
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }
}

/// Owns an nghttp2 client session; freed in `deinit`.
final class HTTP2Session {
    let handle: OpaquePointer

    init(callbacks: OpaquePointer, userData: UnsafeMutableRawPointer) throws {
        var session: OpaquePointer?
        try checkHTTP2(nghttp2_session_client_new(&session, callbacks, userData), "nghttp2_session_client_new")
        guard let session else { throw OutboundHTTPError.transport("nghttp2_session_client_new returned no session") }
        handle = session
    }

    deinit { nghttp2_session_del(handle) }
}

/// Every negative nghttp2 return code goes through here.
@discardableResult
func checkHTTP2(_ code: Int32, _ what: @autoclosure () -> String) throws -> Int32 {
    guard code >= 0 else { throw OutboundHTTPError.transport("\(what()): \(String(cString: nghttp2_strerror(code)))") }
    return code
}

/// One TCP + TLS + HTTP/2 connection to one origin, driven by the client's I/O thread:
/// bytes in through `receive`, frames out through `flush`. nghttp2 keeps the stream and
/// flow-control state; this class keeps which request rides which stream.
final class HTTP2Connection {
    enum State { case connecting, handshaking, open, closed }

    let origin: Origin
    let socket: TCPSocket
    let tls: TLSStream
    private(set) var session: HTTP2Session?
    var state: State = .connecting
    /// Requests on this connection by stream id.
    var streams: [Int32: HTTP2Exchange] = [:]
    /// Whether the peer's first SETTINGS arrived. No stream opens before: a peer that
    /// allows fewer streams, or smaller windows, than the protocol's defaults would see
    /// the excess as an error (nghttpd with 1 KiB windows reset a body sent before its
    /// SETTINGS with FLOW_CONTROL_ERROR). The server sends them right after the handshake.
    var settingsReceived = false
    /// GOAWAY arrived: no new streams; the ones at or below its last stream id finish here.
    var draining = false
    /// Handshake wants the socket writable (rather than readable).
    var handshakeWantsWrite = false
    /// Frames nghttp2 produced that the socket has not taken yet.
    private var outbound: [UInt8] = []
    /// After SSL_write asked for a retry: the length it must be retried with.
    private var retryLength = 0
    var lastActivity = ContinuousClock.now
    var pingSentAt: ContinuousClock.Instant?
    /// Streams the peer closed with REFUSED_STREAM or that never left: safe to send again.
    var retryable: [HTTP2Exchange] = []
    /// Why nghttp2 or the socket gave up, once it did.
    var failure: String?

    /// The address this connection dials, and the ones to try after it when the connect
    /// fails or takes longer than the client's connect timeout.
    let address: ResolvedAddress
    let untried: ArraySlice<ResolvedAddress>
    /// When the connect, or once connected the TLS handshake, began.
    var stepStartedAt = ContinuousClock.now
    /// The next address has been started beside this connect (once per connect).
    var racedNext = false

    init(origin: Origin, address: ResolvedAddress, untried: ArraySlice<ResolvedAddress>, context: TLSContext) throws {
        self.origin = origin
        self.address = address
        self.untried = untried
        socket = try TCPSocket(address: address)
        tls = try TLSStream(context: context, socket: socket, origin: origin)
    }

    /// Streams allowed at once: the peer's SETTINGS_MAX_CONCURRENT_STREAMS and ours.
    func streamLimit(_ ours: Int) -> Int {
        guard let session, settingsReceived else { return 0 }
        let theirs = nghttp2_session_get_remote_settings(session.handle, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return min(ours, Int(theirs))
    }

    var canStartStreams: Bool { state == .open && !draining }

    /// After the handshake: ALPN must have chosen h2; the session sends its preface.
    func start() throws {
        guard tls.negotiatedH2 else { throw OutboundHTTPError.transport("\(origin.authority) does not speak HTTP/2 (ALPN)") }
        let callbacks = try Self.makeCallbacks()
        defer { nghttp2_session_callbacks_del(callbacks) }
        session = try HTTP2Session(callbacks: callbacks, userData: Unmanaged.passUnretained(self).toOpaque())
        // No server push; a 1 MiB connection window so answers never wait for our updates.
        var settings = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)]
        try checkHTTP2(nghttp2_submit_settings(session!.handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count), "SETTINGS")
        try checkHTTP2(nghttp2_session_set_local_window_size(session!.handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 20), "window")
        state = .open
    }

    /// Opens a stream for `exchange` (HEADERS, then DATA from its body as flow control allows).
    func submit(_ exchange: HTTP2Exchange) throws {
        guard let session else { throw OutboundHTTPError.transport("no HTTP/2 session") }
        let request = exchange.request
        // nghttp2 copies names and values during the call: one buffer for all of them, the
        // names lowercased on the way in (HTTP/2 field names are lowercase on the wire).
        var storage: [UInt8] = []
        var size = 40 + request.method.utf8.count + origin.authority.utf8.count + exchange.path.utf8.count
        for (name, value) in request.headers { size += name.utf8.count + value.utf8.count }
        storage.reserveCapacity(size)
        var spans: [(Int, Int, Int, Int)] = []
        spans.reserveCapacity(4 + request.headers.count)
        func add(_ name: String, _ value: String) {
            let nameStart = storage.count
            for byte in name.utf8 { storage.append(byte >= 65 && byte <= 90 ? byte + 32 : byte) }
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            spans.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        add(":method", request.method)
        add(":scheme", "https")
        add(":authority", origin.authority)
        add(":path", exchange.path)
        for (name, value) in request.headers { add(name, value) }
        let hasBody = !request.body.isEmpty
        let streamID: Int32 = storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress ?? UnsafeMutablePointer<UInt8>(bitPattern: 1)!
            var nv = spans.map { span in
                nghttp2_nv(name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { session, streamID, buffer, length, flags, _, userData in
                let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
                guard let exchange = connection.streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
                let body = exchange.request.body
                let count = min(length, body.count - exchange.bodyOffset)
                body.withUnsafeBytes { source in
                    UnsafeMutableRawPointer(buffer!).copyMemory(from: source.baseAddress! + exchange.bodyOffset, byteCount: count)
                }
                exchange.bodyOffset += count
                if exchange.bodyOffset == body.count { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
                return count
            })
            guard hasBody else { return nghttp2_submit_request(session.handle, nil, &nv, nv.count, nil, nil) }
            return nghttp2_submit_request(session.handle, nil, &nv, nv.count, &provider, nil)
        }
        try checkHTTP2(streamID, "HEADERS")
        exchange.attempts += 1
        streams[streamID] = exchange
    }

    /// Gives up on one stream (its caller's timeout passed): RST_STREAM CANCEL.
    func cancel(_ streamID: Int32) {
        streams[streamID] = nil
        if let session { nghttp2_submit_rst_stream(session.handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_CANCEL.rawValue)) }
    }

    func ping() {
        guard let session else { return }
        if nghttp2_submit_ping(session.handle, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 { pingSentAt = .now }
    }

    /// Whether frames wait for the socket to become writable.
    var wantsWrite: Bool { !outbound.isEmpty }

    /// Whether nghttp2 is done with the connection (GOAWAY exchanged, no streams left).
    var finished: Bool {
        guard let session else { return false }
        return nghttp2_session_want_read(session.handle) == 0 && nghttp2_session_want_write(session.handle) == 0 && outbound.isEmpty
    }

    /// Reads what the socket has and feeds it to nghttp2. Returns false when the
    /// connection is gone (`failure` says why).
    func receive(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        guard let session else { return false }
        while true {
            switch tls.read(into: buffer) {
            case .bytes(let count):
                lastActivity = .now
                let consumed = nghttp2_session_mem_recv(session.handle, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count)
                if consumed < 0 {
                    failure = "HTTP/2: \(String(cString: nghttp2_strerror(Int32(consumed))))"
                    return false
                }
            case .wantRead, .wantWrite: return true
            case .closed(let reason):
                failure = reason
                return false
            }
        }
    }

    /// Writes what nghttp2 has to send, coalescing frames into TLS records of up to 64 KiB.
    /// Returns false when the connection is gone.
    func flush() -> Bool {
        guard let session else { return true }
        while true {
            if retryLength == 0 {
                while outbound.count < 65536 {
                    var data: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session.handle, &data)
                    if count < 0 {
                        failure = "HTTP/2: \(String(cString: nghttp2_strerror(Int32(count))))"
                        return false
                    }
                    guard count > 0, let data else { break }
                    outbound.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
                }
            }
            if outbound.isEmpty { return true }
            let length = retryLength > 0 ? retryLength : outbound.count
            let result = outbound.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
            switch result {
            case .bytes(let written):
                retryLength = 0
                outbound.removeFirst(written)
            case .wantRead, .wantWrite:
                retryLength = length
                return true
            case .closed(let reason):
                failure = reason
                return false
            }
        }
    }

    /// Frees what nghttp2 and OpenSSL hold: the connection is not used again.
    func close() {
        state = .closed
        session = nil
    }

    // MARK: nghttp2 callbacks (on the I/O thread, inside mem_recv/mem_send)

    private static func makeCallbacks() throws -> OpaquePointer {
        var callbacks: OpaquePointer?
        try checkHTTP2(nghttp2_session_callbacks_new(&callbacks), "nghttp2_session_callbacks_new")
        guard let callbacks else { throw OutboundHTTPError.transport("nghttp2_session_callbacks_new") }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
            guard let frame, let exchange = connection.streams[frame.pointee.hd.stream_id] else { return 0 }
            exchange.response.header(name: UnsafeBufferPointer(start: name, count: nameLength),
                                     value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, streamID, data, length, userData in
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
            guard let exchange = connection.streams[streamID], let data else { return 0 }
            guard exchange.response.append(UnsafeBufferPointer(start: data, count: length)) else {
                connection.streams[streamID] = nil
                exchange.finish(.failure(OutboundHTTPError.transport("response body over \(exchange.response.bodyLimit) bytes")))
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_CANCEL.rawValue))
                return 0
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
            if let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
                connection.streams[frame.pointee.hd.stream_id]?.headersSent = true
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
            guard let frame else { return 0 }
            let type = frame.pointee.hd.type
            let ack = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
               type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
                connection.streams[frame.pointee.hd.stream_id]?.responseComplete = true
            }
            if type == UInt8(NGHTTP2_SETTINGS.rawValue), !ack {
                connection.settingsReceived = true
            } else if type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                // nghttp2 closes the streams above last_stream_id with REFUSED_STREAM.
                connection.draining = true
            } else if type == UInt8(NGHTTP2_PING.rawValue), ack {
                connection.pingSentAt = nil
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
            guard let exchange = connection.streams.removeValue(forKey: streamID) else { return 0 }
            connection.streamClosed(exchange, errorCode: errorCode)
            return 0
        }
        return callbacks
    }

    /// A stream ended: its answer, or — when the peer cannot have acted on it (never
    /// sent, or refused: RFC 9113 §8.7, as GOAWAY does above its last stream id) — back
    /// to the client's queue; otherwise a transport error, never a second send.
    private func streamClosed(_ exchange: HTTP2Exchange, errorCode: UInt32) {
        // A peer may answer before the request body is all sent and then reset the rest
        // (RFC 9113 §8.1): the answer counts.
        if exchange.response.status != 0, errorCode == NGHTTP2_NO_ERROR.rawValue || exchange.responseComplete {
            exchange.finish(.success(exchange.response.response))
        } else if !exchange.headersSent || errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            exchange.response = HTTP2ResponseParts()
            exchange.responseComplete = false
            exchange.bodyOffset = 0
            exchange.headersSent = false
            retryable.append(exchange)
        } else {
            let reason = errorCode == NGHTTP2_NO_ERROR.rawValue ? "stream closed without a response"
                : "stream reset: \(String(cString: nghttp2_http2_strerror(errorCode)))"
            exchange.finish(.failure(OutboundHTTPError.transport(reason)))
        }
    }
}
