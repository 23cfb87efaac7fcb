import Foundation
import PortariaCore

/// The credentials a realtime socket opens with (`SessionManager`).
public protocol RealtimeCredentials: Sendable {
    /// `Authorization` and `X-Company-Id` for the handshake; throws when logged out.
    func realtimeHeaders() async throws -> [String: String]
    /// The handshake answered 401 with `headers`: rotate the tokens (shared with other
    /// callers that saw the same token fail).
    func realtimeRejected(_ headers: [String: String]) async throws
}

/// The live feed of a resident's visits, as the spec's §8 asks: WebSocket while the app
/// is in the foreground, but the REST API is the truth — on start and on every return
/// to the foreground the client reconciles over REST *first*, then opens the socket
/// with `since` so the stream continues exactly where that read left off.
///
/// - Events are de-duplicated by `seq` (a replay after a reconnect may overlap what was
///   seen), and only ever move forward.
/// - `resync_required` (too far behind) triggers a REST read, then the stream resumes.
/// - A socket opened without `since` (first run) gets a second REST read once
///   `subscribed` arrives, closing the gap between the first read and the subscription.
/// - Lost sockets reconnect with exponential backoff and jitter; a 401 refreshes the
///   token first. The state (`connecting`, `live`, `reconnecting`, `offline`) is
///   published for the screen.
public actor RealtimeClient {
    /// What the screen (or `portaria client watch`) receives, in order.
    public enum Update: Sendable, Equatable {
        case state(ConnectionState)
        /// A REST read: the unit's pendências and the most recent visits, the truth as of now.
        case snapshot(pending: [Visit], recent: [Visit])
        case event(VisitEventType, seq: Int64, VisitEventData)
        /// Video-call signaling for the call layer.
        case call(type: String, data: JSONValue)
    }

    private let baseURL: URL
    private let http: any AuthorizedHTTP
    private let credentials: any RealtimeCredentials
    private let transport: any RealtimeTransport
    private let clock: any ClientClock
    private let random: RandomSource
    private let policy: RetryPolicy
    private let deviceID: String?
    private let continuation: AsyncStream<Update>.Continuation
    public nonisolated let updates: AsyncStream<Update>

    public private(set) var state: ConnectionState = .offline
    /// The last event seq delivered (what `since` will ask from).
    public private(set) var lastSeq: Int64?
    private var loop: Task<Void, Never>?
    /// Which loop owns `connection`: a cancelled loop finishing late must not clear the
    /// socket of the loop that replaced it.
    private var generation = 0
    private var connection: (any RealtimeConnection)?
    private var hasBeenLive = false

    /// Reconnect backoff: ½ s doubling to 30 s.
    public static let reconnectPolicy = RetryPolicy(initialDelay: 0.5, multiplier: 2, maximumDelay: 30, maximumRetryAfter: 60)

    public init(baseURL: URL, http: any AuthorizedHTTP, credentials: any RealtimeCredentials, transport: any RealtimeTransport,
                clock: any ClientClock = SystemClock(), random: RandomSource = .system,
                policy: RetryPolicy = RealtimeClient.reconnectPolicy, deviceID: String? = nil, lastSeq: Int64? = nil) {
        self.baseURL = baseURL
        self.http = http
        self.credentials = credentials
        self.transport = transport
        self.clock = clock
        self.random = random
        self.policy = policy
        self.deviceID = deviceID
        self.lastSeq = lastSeq
        (updates, continuation) = AsyncStream.makeStream(of: Update.self)
    }

    /// Starts (or restarts, after `foreground()`) the reconcile-then-stream loop.
    public func start() {
        guard loop == nil else { return }
        generation += 1
        let current = generation
        loop = Task { await self.run(generation: current) }
    }

    /// The app came back to the foreground: whatever the socket says, read REST again
    /// first, then resume the stream from `lastSeq`.
    public func foreground() {
        stopLoop()
        start()
    }

    /// Background or logout: close the socket, publish `offline`.
    public func stop() {
        stopLoop()
        publish(.offline)
    }

    /// Ends `updates` for good.
    public func finish() {
        stop()
        continuation.finish()
    }

    /// Sends a frame on the live socket (call signaling); false when there is none.
    @discardableResult
    public func send(_ frame: RealtimeFrame) -> Bool {
        guard let connection, state == .live else { return false }
        connection.send(frame.jsonText)
        return true
    }

    private func stopLoop() {
        loop?.cancel()
        loop = nil
        connection?.close()
        connection = nil
    }

    private func publish(_ new: ConnectionState) {
        guard new != state else { return }
        state = new
        if new == .live { hasBeenLive = true }
        continuation.yield(.state(new))
    }

    // MARK: The loop

    private func run(generation current: Int) async {
        var failures = 0
        var needsReconcile = true
        while !Task.isCancelled {
            publish(hasBeenLive || failures > 0 ? .reconnecting : .connecting)
            if needsReconcile {
                do {
                    try await reconcile()
                    needsReconcile = false
                } catch {
                    failures += 1
                    if await backoff(failures) { continue } else { return }
                }
            }
            let headers: [String: String]
            do {
                headers = try await credentials.realtimeHeaders()
            } catch {
                publish(.offline)   // logged out: nothing to stream
                return
            }
            let openedWithoutSince = lastSeq == nil
            let socket: any RealtimeConnection
            do {
                socket = try await transport.connect(url: realtimeURL(), headers: headers)
            } catch {
                failures += 1
                if case .rejected(let status) = error, status == 401 {
                    // An expired access token: refresh, then try again at once.
                    if (try? await credentials.realtimeRejected(headers)) == nil {
                        publish(.offline)
                        return
                    }
                    if failures <= 1 { continue }
                }
                if await backoff(failures) { continue } else { return }
            }
            guard !Task.isCancelled else {
                socket.close()
                return
            }
            guard current == generation else {
                socket.close()
                return
            }
            connection = socket
            for await text in socket.messages {
                switch RealtimeMessage.parse(text) {
                case .subscribed(let seq):
                    failures = 0
                    if openedWithoutSince {
                        lastSeq = max(lastSeq ?? 0, seq)
                        // Events between the first REST read and this frame were in neither.
                        try? await reconcile()
                    }
                    publish(.live)
                case .resyncRequired(let seq):
                    // Too far behind for a replay: REST is the truth, then the stream from `seq`.
                    try? await reconcile()
                    lastSeq = seq
                case .event(let type, let seq, let data):
                    if let last = lastSeq, seq <= last { continue }   // a replayed duplicate
                    lastSeq = seq
                    continuation.yield(.event(type, seq: seq, data))
                case .call(let type, let data):
                    continuation.yield(.call(type: type, data: data))
                case .pong, .error, .unknown:
                    continue
                }
            }
            if current == generation { connection = nil }
            if Task.isCancelled { return }
            failures += 1
            publish(.reconnecting)
            if await backoff(failures) == false { return }
        }
    }

    /// Sleeps before the next try; false when cancelled.
    private func backoff(_ failures: Int) async -> Bool {
        let wait = policy.delay(afterFailures: failures, random: random.next())
        do {
            try await clock.sleep(for: wait)
            return true
        } catch {
            return false
        }
    }

    private func realtimeURL() -> URL {
        var components = URLComponents(url: baseURL.appendingPathComponent(APIRoutes.realtime.endpoint.path), resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        var query: [URLQueryItem] = []
        if let lastSeq { query.append(URLQueryItem(name: "since", value: String(lastSeq))) }
        if let deviceID { query.append(URLQueryItem(name: "device_id", value: deviceID)) }
        components.queryItems = query.isEmpty ? nil : query
        return components.url!
    }

    /// The REST truth: pendências and the latest visits.
    private func reconcile() async throws {
        func page(_ status: String) async throws -> [Visit] {
            try await http.send(APIRoutes.visits.endpoint, query: [URLQueryItem(name: "status", value: status)]).visits
        }
        let pending = try await page("pending")
        let recent = try await page("history")
        continuation.yield(.snapshot(pending: pending, recent: recent))
    }
}
