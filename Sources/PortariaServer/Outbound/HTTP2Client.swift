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
/// Reused from one request to the next (`recycle`): allocating and configuring a fresh
/// handle per push was a measurable part of the client's cost (decision 0032).
final class CurlTransfer {
    let handle: UnsafeMutableRawPointer
    var headerList: UnsafeMutablePointer<curl_slist>?
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var continuation: CheckedContinuation<OutboundResponse, any Error>?

    init() throws {
        guard let handle = curl_easy_init() else { throw OutboundHTTPError.transport("curl_easy_init failed") }
        self.handle = handle
    }

    /// Back to a blank handle for the next request; libcurl keeps the connection, the
    /// TLS session and the DNS cache, which live in the multi handle.
    func recycle() {
        curl_easy_reset(handle)
        curl_slist_free_all(headerList)
        headerList = nil
        body = []
        headers = [:]
        continuation = nil
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
    }
}

/// A request waiting for a stream on the connection.
private struct QueuedRequest {
    let request: OutboundRequest
    let continuation: CheckedContinuation<OutboundResponse, any Error>
    let deadline: ContinuousClock.Instant
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
///
/// At most `maxConcurrentStreams` requests are handed to libcurl at a time; the rest wait
/// here, in order, and their timeout counts from `send`; until the first response on a
/// new connection only one goes (see `streamsConfirmed`). libcurl also honours the
/// server's SETTINGS_MAX_CONCURRENT_STREAMS when it is lower (its own pending list), but
/// every transfer parked there is revisited on each pass of the multi loop, which cost
/// twice the CPU per push at 1,000 in flight (decision 0032). Easy handles are reused.
public final class HTTP2Client: @unchecked Sendable {
    // `multi`, `active`, `waiting` and `idle` are touched only by the loop thread;
    // `queue` and `stopped` are locked.
    private let multi: CurlMulti
    private let caFile: String?
    private let maxConcurrentStreams: Int
    private let queue = Locked<[QueuedRequest]>([])
    private let stopped = Locked(false)
    /// The loop thread, joined by `shutdown()`. Set once in `init`, before anyone can call
    /// `shutdown()`; the loop thread itself never reads it.
    private var loopThread = pthread_t()
    /// The loop thread's name (`top -H`, gdb); Linux keeps 15 bytes of it.
    private let threadName: String
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Requests beyond `maxConcurrentStreams`, oldest first from `waitingHead`.
    private var waiting: [QueuedRequest] = []
    private var waitingHead = 0
    /// Whether a response has arrived since the connection was (re)opened, so libcurl has
    /// the server's SETTINGS. Until then one request at a time: before SETTINGS, libcurl
    /// assumes 100 streams, and a server that allows fewer treats the excess as a
    /// protocol error — against the local APNs fake announcing 10 streams, a loaded run
    /// opened 9 connections for 120 pushes that way.
    private var streamsConfirmed = false
    private var nextExpiryScan = ContinuousClock.now
    /// Easy handles whose transfer is over, ready for the next request.
    private var idle: [CurlTransfer] = []
    private let log: Log
    /// Connections opened so far (for tests and benchmarks: proves reuse).
    public let connectionsOpened = Locked(0)
    /// Easy handles created so far: bounded by `maxConcurrentStreams`, not by the number
    /// of requests (tests assert reuse).
    public let handlesCreated = Locked(0)

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// - Parameters:
    ///   - caFile: a CA bundle to trust instead of the system's (tests use a local CA).
    ///   - maxConcurrentStreams: requests in flight on the one connection; more wait in this
    ///     client's queue. 100 is the smallest limit RFC 9113 recommends servers allow and
    ///     nghttp2's default; a server announcing fewer lowers it further (libcurl honours
    ///     SETTINGS_MAX_CONCURRENT_STREAMS). At 100 streams per round trip one connection
    ///     carries ~700 pushes/s to a provider 150 ms away, far above a ring peak.
    public init(caFile: String? = nil, maxConcurrentStreams: Int = 100, label: String = "http2", log: Log = .shared) throws {
        _ = Self.globalInit
        self.caFile = caFile
        self.maxConcurrentStreams = max(1, maxConcurrentStreams)
        self.log = log
        threadName = String("portaria.\(label)".utf8.prefix(15)) ?? "portaria.http2"
        multi = try CurlMulti()
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING")
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_MAX_HOST_CONNECTIONS, 1), "CURLMOPT_MAX_HOST_CONNECTIONS")
        try check(portaria_curlm_set_long(multi.handle, CURLMOPT_MAX_CONCURRENT_STREAMS, self.maxConcurrentStreams),
                  "CURLMOPT_MAX_CONCURRENT_STREAMS")
        // A joinable pthread, not a Foundation `Thread`: `shutdown()` must wait for the
        // thread's exit, not for a signal sent from inside it. Its TLS handshakes leave
        // OpenSSL state on the thread (a public and a private DRBG), which OpenSSL frees in
        // a thread-exit destructor. Signalled but not yet exited, the thread could finish
        // after `exit()` had run OpenSSL's atexit cleanup, which skips that destructor:
        // LeakSanitizer then saw both DRBGs lost (decision 0053).
        let context = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&loopThread, nil, { context in
            // The thread owns the reference taken above until its loop returns.
            let client = Unmanaged<HTTP2Client>.fromOpaque(context!).takeRetainedValue()
            Thread.current.name = client.threadName
            client.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<HTTP2Client>.fromOpaque(context).release()
            throw OutboundHTTPError.transport("cannot start the HTTP/2 loop thread: \(String(cString: strerror(status)))")
        }
    }

    deinit {
        // The loop holds `self` until `shutdown()`; reaching deinit means it has exited.
    }

    /// Sends one request over the shared connection.
    public func send(_ request: OutboundRequest) async throws -> OutboundResponse {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(max(1, Int(request.timeout * 1000))))
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.withLock { pending -> Bool in
                guard !stopped.current else { return false }
                pending.append(QueuedRequest(request: request, continuation: continuation, deadline: deadline))
                return true
            }
            guard accepted else {
                continuation.resume(throwing: OutboundHTTPError.transport("HTTP/2 client is shut down"))
                return
            }
            // Thread-safe by libcurl's contract: breaks curl_multi_poll out of its wait.
            _ = curl_multi_wakeup(multi.handle)
        }
    }

    /// Fails what is in flight, stops the loop thread and waits until it has exited.
    public func shutdown() {
        let already = stopped.withLock { value -> Bool in
            defer { value = true }
            return value
        }
        guard !already else { return }
        _ = curl_multi_wakeup(multi.handle)
        // Returns once the thread has exited, its thread-exit destructors (OpenSSL's
        // among them) run.
        let status = pthread_join(loopThread, nil)
        precondition(status == 0, "pthread_join of the HTTP/2 loop thread: \(status)")
    }

    private func configure(_ transfer: CurlTransfer, _ request: OutboundRequest, timeoutMilliseconds: Int) throws {
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
        try check(portaria_curl_set_long(h, CURLOPT_TIMEOUT_MS, timeoutMilliseconds), "CURLOPT_TIMEOUT_MS")
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
            if let data {
                HTTP2Client.parseHeaderLine(UnsafeRawBufferPointer(start: data, count: length), into: &transfer.headers)
            }
            return length
        }, "CURLOPT_HEADERFUNCTION")
        try check(portaria_curl_set_pointer(h, CURLOPT_HEADERDATA, opaque), "CURLOPT_HEADERDATA")
    }

    // MARK: the loop thread

    private func run() {
        while true {
            let (incoming, stop) = queue.withLock { pending -> ([QueuedRequest], Bool) in
                defer { pending.removeAll() }
                return (pending, stopped.current)
            }
            waiting.append(contentsOf: incoming)
            if stop {
                for (handle, transfer) in active {
                    _ = curl_multi_remove_handle(multi.handle, handle)
                    complete(transfer, .failure(OutboundHTTPError.transport("HTTP/2 client is shut down")))
                }
                active.removeAll()
                for queued in waiting[waitingHead...] {
                    queued.continuation.resume(throwing: OutboundHTTPError.transport("HTTP/2 client is shut down"))
                }
                waiting.removeAll()
                idle.removeAll()
                return
            }
            expireWaiting()
            admit()
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
                // A response means the server's SETTINGS came first; a transport failure may
                // mean the connection is gone and the next one starts unconfirmed.
                streamsConfirmed = result == CURLE_OK
                if result == CURLE_OK {
                    complete(transfer, .success(OutboundResponse(status: portaria_curl_response_code(easy),
                                                                  headers: transfer.headers, body: transfer.body)))
                } else {
                    complete(transfer, .failure(OutboundHTTPError.transport(String(cString: curl_easy_strerror(result)))))
                }
            }
            // Streams freed above: start waiting requests before sleeping.
            if waitingHead < waiting.count && active.count < streamLimit { continue }
            // Sleeps until a socket is ready, a timeout is due, or `curl_multi_wakeup`; while
            // requests wait, at most until the next look at their deadlines.
            var ready: Int32 = 0
            _ = curl_multi_poll(multi.handle, nil, 0, waitingHead < waiting.count ? 100 : 1000, &ready)
        }
    }

    /// Fails waiting requests whose timeout has passed, every 100 ms at most (one pass over
    /// the queue), so a caller behind busy streams gets its answer at its own deadline.
    private func expireWaiting() {
        guard waitingHead < waiting.count else { return }
        let now = ContinuousClock.now
        guard now >= nextExpiryScan else { return }
        nextExpiryScan = now.advanced(by: .milliseconds(100))
        var kept: [QueuedRequest] = []
        kept.reserveCapacity(waiting.count - waitingHead)
        for queued in waiting[waitingHead...] {
            if queued.deadline <= now {
                queued.continuation.resume(throwing: OutboundHTTPError.transport("timed out waiting for a stream"))
            } else {
                kept.append(queued)
            }
        }
        waiting = kept
        waitingHead = 0
    }

    private var streamLimit: Int { streamsConfirmed ? maxConcurrentStreams : 1 }

    /// Hands waiting requests to libcurl while fewer than `maxConcurrentStreams` are in
    /// flight; a request whose timeout passed while it waited fails without being sent.
    private func admit() {
        let now = ContinuousClock.now
        while active.count < streamLimit, waitingHead < waiting.count {
            let queued = waiting[waitingHead]
            waitingHead += 1
            let remaining = now.duration(to: queued.deadline).components
            let milliseconds = Int(remaining.seconds) * 1000 + Int(remaining.attoseconds / 1_000_000_000_000_000)
            guard milliseconds > 0 else {
                queued.continuation.resume(throwing: OutboundHTTPError.transport("timed out waiting for a stream"))
                continue
            }
            let transfer: CurlTransfer
            do {
                if let reused = idle.popLast() {
                    transfer = reused
                } else {
                    transfer = try CurlTransfer()
                    handlesCreated.withLock { $0 += 1 }
                }
            } catch {
                queued.continuation.resume(throwing: error)
                continue
            }
            transfer.continuation = queued.continuation
            do {
                try configure(transfer, queued.request, timeoutMilliseconds: milliseconds)
                try check(curl_multi_add_handle(multi.handle, transfer.handle), "curl_multi_add_handle")
                active[transfer.handle] = transfer
            } catch {
                complete(transfer, .failure(error))
            }
        }
        // Drop what was taken from the front once it is most of the array (amortised O(1)).
        if waitingHead > 1024, waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Resumes the caller and returns the handle to the idle pool.
    private func complete(_ transfer: CurlTransfer, _ result: Result<OutboundResponse, any Error>) {
        let continuation = transfer.continuation
        transfer.recycle()
        idle.append(transfer)
        continuation?.resume(with: result)
    }

    /// One response header line from libcurl ("Name: value\r\n", or a status line, which
    /// starts a new response head after 100-continue or a redirect), parsed on bytes:
    /// Foundation's trimming showed up in the push profile.
    static func parseHeaderLine(_ line: UnsafeRawBufferPointer, into headers: inout [String: String]) {
        if line.starts(with: "HTTP/".utf8) {
            headers = [:]
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1
        var end = line.count
        while start < end, isSpace(line[start]) { start += 1 }
        while end > start, isSpace(line[end - 1]) { end -= 1 }
        let name = String(decoding: line[..<colon].lazy.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        headers[name] = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }
}
