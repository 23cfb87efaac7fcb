import CCurl
import Foundation
import PortariaCore

/// Owns a libcurl multi handle; freed in `deinit`.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer
    init() throws {
        guard let handle = curl_multi_init() else { throw OutboundHTTPError.transport("curl_multi_init failed") }
        self.handle = handle
    }
    deinit { curl_multi_cleanup(handle) }
}

/// Owns one libcurl easy handle and what must outlive its transfer (header list, output).
final class CurlTransfer {
    let handle: UnsafeMutableRawPointer
    var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var continuation: CheckedContinuation<OutboundResponse, any Error>?
    let started = ContinuousClock.now

    init() throws {
        guard let handle = curl_easy_init() else { throw OutboundHTTPError.transport("curl_easy_init failed") }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
    }
}

/// Every libcurl return code goes through here.
func check(_ code: CURLcode, _ what: @autoclosure () -> String) throws {
    guard code == CURLE_OK else {
        throw OutboundHTTPError.transport("\(what()): \(String(cString: curl_easy_strerror(code)))")
    }
}

func check(_ code: CURLMcode, _ what: @autoclosure () -> String) throws {
    guard code == CURLM_OK else {
        throw OutboundHTTPError.transport("\(what()): \(String(cString: curl_multi_strerror(code)))")
    }
}

/// HTTP/2 client for APNs and FCM on libcurl's multi interface with nghttp2.
///
/// One dedicated thread runs the event loop (`curl_multi_poll`); async callers hand it
/// requests through a locked queue and `curl_multi_wakeup`. Requests to one host share a
/// single warm TLS connection (multiplexing, `PIPEWAIT`, at most one connection per
/// host), which is what Apple asks of providers: keep the connection open rather than
/// opening one per push. When the server sends GOAWAY, libcurl stops using that
/// connection and the next request opens a new one.
public final class HTTP2Client: @unchecked Sendable {
    // `multi` and `active` are touched only by the loop thread; `queue` and `stopped` are locked.
    private let multi: CurlMulti
    private let caFile: String?
    private let queue = Locked<[CurlTransfer]>([])
    private let stopped = Locked(false)
    private let finished = DispatchSemaphore(value: 0)
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private let log: Log
    /// Connections opened so far (for tests and benchmarks: proves reuse).
    public let connectionsOpened = Locked(0)

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// - Parameters:
    ///   - caFile: a CA bundle to trust instead of the system's (tests use a local CA).
    ///   - maxConcurrentStreams: streams libcurl may open on the one connection; the server's
    ///     SETTINGS_MAX_CONCURRENT_STREAMS lowers it (APNs announces its own limit).
    public init(caFile: String? = nil, maxConcurrentStreams: Int = 1000, label: String = "http2", log: Log = .shared) throws {
        _ = Self.globalInit
        self.caFile = caFile
        self.log = log
        multi = try CurlMulti()
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING")
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_MAX_HOST_CONNECTIONS, 1), "CURLMOPT_MAX_HOST_CONNECTIONS")
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_MAX_CONCURRENT_STREAMS, maxConcurrentStreams),
                  "CURLMOPT_MAX_CONCURRENT_STREAMS")
        let thread = Thread { [self] in self.run() }
        thread.name = "portaria.\(label)"
        thread.start()
    }

    deinit {
        // The loop holds `self` until `shutdown()`; reaching deinit means it has exited.
    }

    /// Sends one request over the shared connection.
    public func send(_ request: OutboundRequest) async throws -> OutboundResponse {
        let transfer = try CurlTransfer()
        try configure(transfer, request)
        return try await withCheckedThrowingContinuation { continuation in
            transfer.continuation = continuation
            let accepted = queue.withLock { pending -> Bool in
                guard !stopped.current else { return false }
                pending.append(transfer)
                return true
            }
            guard accepted else {
                transfer.continuation = nil
                continuation.resume(throwing: OutboundHTTPError.transport("HTTP/2 client is shut down"))
                return
            }
            // Thread-safe by libcurl's contract: breaks curl_multi_poll out of its wait.
            _ = curl_multi_wakeup(multi.handle)
        }
    }

    /// Fails what is in flight, stops the loop thread and waits for it.
    public func shutdown() {
        let already = stopped.withLock { value -> Bool in
            defer { value = true }
            return value
        }
        guard !already else { return }
        _ = curl_multi_wakeup(multi.handle)
        finished.wait()
    }

    private func configure(_ transfer: CurlTransfer, _ request: OutboundRequest) throws {
        let h = transfer.handle
        try check(portaria_curl_set_string(h, CURLOPT_URL, request.url), "CURLOPT_URL")
        try check(portaria_curl_set_string(h, CURLOPT_PROTOCOLS_STR, "https,http"), "CURLOPT_PROTOCOLS_STR")
        // HTTP/2 over TLS (ALPN h2); APNs speaks nothing else.
        try check(portaria_curl_set_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "CURLOPT_HTTP_VERSION")
        // Wait for the existing connection to confirm it multiplexes instead of opening a
        // second one while the first handshake is still running.
        try check(portaria_curl_set_long(h, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        try check(portaria_curl_set_long(h, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try check(portaria_curl_set_long(h, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
        try check(portaria_curl_set_long(h, CURLOPT_TIMEOUT_MS, max(1, Int(request.timeout * 1000))), "CURLOPT_TIMEOUT_MS")
        try check(portaria_curl_set_long(h, CURLOPT_CONNECTTIMEOUT_MS, 5000), "CURLOPT_CONNECTTIMEOUT_MS")
        if let caFile { try check(portaria_curl_set_string(h, CURLOPT_CAINFO, caFile), "CURLOPT_CAINFO") }
        for (name, value) in request.headers { transfer.headerList = curl_slist_append(transfer.headerList, "\(name): \(value)") }
        // libcurl adds `Expect: 100-continue` to larger POSTs; over HTTP/2 that only costs a round trip.
        transfer.headerList = curl_slist_append(transfer.headerList, "Expect:")
        try check(portaria_curl_set_slist(h, CURLOPT_HTTPHEADER, transfer.headerList), "CURLOPT_HTTPHEADER")
        if request.method == "POST" || !request.body.isEmpty {
            let body = request.body.isEmpty ? [UInt8(0)] : request.body
            let count = request.body.count
            let code = body.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { portaria_curl_set_post_body(h, $0.baseAddress, count) }
            }
            try check(code, "request body")
        }
        if request.method != "POST" && request.method != "GET" {
            try check(portaria_curl_set_string(h, CURLOPT_CUSTOMREQUEST, request.method), "CURLOPT_CUSTOMREQUEST")
        }
        let opaque = Unmanaged.passUnretained(transfer).toOpaque()
        try check(portaria_curl_set_pointer(h, CURLOPT_PRIVATE, opaque), "CURLOPT_PRIVATE")
        try check(portaria_curl_set_write_function(h) { data, size, count, context in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            if let data {
                data.withMemoryRebound(to: UInt8.self, capacity: length) {
                    transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                }
            }
            return length
        }, "CURLOPT_WRITEFUNCTION")
        try check(portaria_curl_set_pointer(h, CURLOPT_WRITEDATA, opaque), "CURLOPT_WRITEDATA")
        try check(portaria_curl_set_header_function(h) { data, size, count, context in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            if let data, let line = String(bytes: UnsafeRawBufferPointer(start: data, count: length), encoding: .utf8) {
                if line.hasPrefix("HTTP/") {
                    transfer.headers = [:]  // a new response head (after 100-continue or a redirect)
                } else if let colon = line.firstIndex(of: ":") {
                    transfer.headers[line[..<colon].lowercased()] =
                        line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                }
            }
            return length
        }, "CURLOPT_HEADERFUNCTION")
        try check(portaria_curl_set_pointer(h, CURLOPT_HEADERDATA, opaque), "CURLOPT_HEADERDATA")
    }

    // MARK: the loop thread

    private func run() {
        defer { finished.signal() }
        while true {
            let (incoming, stop) = queue.withLock { pending -> ([CurlTransfer], Bool) in
                defer { pending.removeAll() }
                return (pending, stopped.current)
            }
            for transfer in incoming {
                do {
                    try check(curl_multi_add_handle(multi.handle, transfer.handle), "curl_multi_add_handle")
                    active[transfer.handle] = transfer
                } catch {
                    complete(transfer, .failure(error))
                }
            }
            if stop {
                for (handle, transfer) in active {
                    _ = curl_multi_remove_handle(multi.handle, handle)
                    complete(transfer, .failure(OutboundHTTPError.transport("HTTP/2 client is shut down")))
                }
                active.removeAll()
                return
            }
            var running: Int32 = 0
            do {
                try check(curl_multi_perform(multi.handle, &running), "curl_multi_perform")
            } catch {
                log.error("HTTP/2 event loop", ["error": .string("\(error)")])
            }
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi.handle, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let result = message.pointee.data.result
                _ = curl_multi_remove_handle(multi.handle, easy)
                guard let transfer = active.removeValue(forKey: easy) else { continue }
                connectionsOpened.withLock { $0 += portaria_curl_num_connects(easy) }
                if result == CURLE_OK {
                    complete(transfer, .success(OutboundResponse(status: portaria_curl_response_code(easy),
                                                                  headers: transfer.headers, body: transfer.body)))
                } else {
                    complete(transfer, .failure(OutboundHTTPError.transport(String(cString: curl_easy_strerror(result)))))
                }
            }
            // Sleeps until a socket is ready, a timeout is due, or `curl_multi_wakeup`.
            var ready: Int32 = 0
            _ = curl_multi_poll(multi.handle, nil, 0, 1000, &ready)
        }
    }

    private func complete(_ transfer: CurlTransfer, _ result: Result<OutboundResponse, any Error>) {
        let continuation = transfer.continuation
        transfer.continuation = nil
        continuation?.resume(with: result)
    }
}
