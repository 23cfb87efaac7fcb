#if canImport(Glibc)
import CWslay
import Foundation
import PortariaCore
import Glibc

/// One open WebSocket, server or client side, framed by wslay and driven by an
/// ``EventLoop``.
///
/// All public methods are safe from any thread: they hop to the loop. The handlers run on
/// the loop thread and must not block it (hand slow work to a task).
public final class WebSocketConnection: @unchecked Sendable, Hashable, CustomStringConvertible {
    // Thread confinement: every `var` below and the wslay context are only touched on
    // `loop`'s thread (public methods hop there with `loop.execute`); `id`, `loop`,
    // `descriptor`, `role` and `configuration` never change. The object is freed only once
    // the loop no longer holds it, so `deinit` cannot race with a wslay call.

    /// Which end of the connection this is: clients mask their frames, servers must not.
    public enum Role: Sendable { case server, client }

    /// What the owner wants to hear about. Called on the loop thread.
    public struct Handlers: Sendable {
        /// The socket is being served (a route can send its first messages here).
        public var onOpen: @Sendable (WebSocketConnection) -> Void
        /// A complete text message, already checked to be UTF-8.
        public var onText: @Sendable (WebSocketConnection, String) -> Void
        /// A complete binary message.
        public var onBinary: @Sendable (WebSocketConnection, [UInt8]) -> Void
        /// Called exactly once, after the socket is released.
        public var onClose: @Sendable (WebSocketConnection, WebSocketCloseCode, String) -> Void

        public init(onOpen: @escaping @Sendable (WebSocketConnection) -> Void = { _ in },
                    onText: @escaping @Sendable (WebSocketConnection, String) -> Void = { _, _ in },
                    onBinary: @escaping @Sendable (WebSocketConnection, [UInt8]) -> Void = { _, _ in },
                    onClose: @escaping @Sendable (WebSocketConnection, WebSocketCloseCode, String) -> Void = { _, _, _ in }) {
            self.onOpen = onOpen
            self.onText = onText
            self.onBinary = onBinary
            self.onClose = onClose
        }
    }

    /// A process-unique number, for logs.
    public let id: UInt64
    /// The loop that owns the socket; handlers run on its thread.
    public let loop: EventLoop
    public let role: Role
    /// Limits and timers, fixed for the connection's life.
    public let configuration: WebSocketConfiguration
    let descriptor: Int32

    /// wslay's state: about 8.5 KiB (a 4 KiB input and a 4 KiB output buffer), so it
    /// exists only while a frame is half-read, a message half-assembled or something waits
    /// to be sent; an idle open socket holds none (see ``releaseIdleContext()``).
    var context: wslay_event_context_ptr?
    /// Bytes handed to the current context, and bytes of the whole frames it parsed out of
    /// them: equal means nothing is left in wslay's input buffer.
    var inputFed: UInt64 = 0
    var inputFramed: UInt64 = 0
    /// Size on the wire (header and payload) of the frame being received.
    var frameBytes: UInt64 = 0
    /// A fragmented data message has started and not ended.
    var messageOpen = false
    var handlers: Handlers
    /// Bytes the HTTP layer read past the handshake; consumed before the socket.
    var bufferedInput: [UInt8]
    var bufferedOffset = 0
    /// Gives the socket back: libmicrohttpd's upgrade handle on the server, `close(2)` on
    /// the client.
    var release: (@Sendable () -> Void)?
    var phase: Phase = .open
    var lastReceived: UInt64
    var pingSentAt: UInt64?
    var closeStartedAt: UInt64?
    /// The wake-up asked of the loop, if any (see ``armTimer()``).
    private var armedAt: UInt64 = .max
    /// When the lingering close began (see ``linger(fallback:)``).
    var lingerStartedAt: UInt64?
    var lingerFallback: (code: WebSocketCloseCode, reason: String)?
    var watchedEvents: UInt32 = 0
    /// True while wslay_event_recv runs: handlers may send or close from inside it, and
    /// the socket must not be released under wslay's feet. Sends wait for the flush after
    /// it returns; a finish is remembered in `deferredFinish`.
    var receiving = false
    var deferredFinish: (code: WebSocketCloseCode, reason: String)?
    var receivedClose: (code: WebSocketCloseCode, reason: String)?
    /// Why we are closing when the peer did not start it (1007, 1008, shutdown...).
    var localClose: (code: WebSocketCloseCode, reason: String)?
    /// wslay sends a frame's header and its payload in two calls (the header flagged
    /// `WSLAY_MSG_MORE`). A broadcast to ten thousand sockets is syscall-bound, so a short
    /// chunk flagged "more" is held here and leaves with the next one in one `sendmsg`.
    var heldChunk: (UInt64, UInt64) = (0, 0)
    var heldCount = 0
    /// The rest of a prebuilt frame (``sendOnLoop(frame:)``) the socket did not take at
    /// once. It leaves before anything wslay sends, so frames stay in order.
    var rawPending: [UInt8] = []
    var rawPendingOffset = 0

    /// Owner's per-connection value (the server hub keeps its bookkeeping here).
    var attachment: AnyObject?

    /// `lingering`: our close frame is out and our side of the stream shut down; what the
    /// peer still sends is read and thrown away until it closes or the linger times out.
    enum Phase { case open, closing, lingering, closed }

    private static let counter = Locked<UInt64>(0)

    /// Wraps an already connected socket. Call ``start()`` to begin serving it.
    /// - Parameters:
    ///   - release: how to give the socket back when the WebSocket ends; `nil` closes it.
    init(descriptor: Int32, role: Role, configuration: WebSocketConfiguration, loop: EventLoop,
         bufferedInput: [UInt8], handlers: Handlers, release: (@Sendable () -> Void)?) {
        id = Self.counter.withLock { $0 += 1; return $0 }
        self.descriptor = descriptor
        self.role = role
        self.configuration = configuration
        self.loop = loop
        self.bufferedInput = bufferedInput
        self.handlers = handlers
        self.release = release ?? { _ = Glibc.close(descriptor) }
        lastReceived = MonotonicClock.now()
    }

    deinit {
        if let context { wslay_event_context_free(context) }
    }

    public static func == (lhs: WebSocketConnection, rhs: WebSocketConnection) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "WebSocket#\(id)" }

    // MARK: Public API (any thread)

    /// Queues a text message. A reader so slow that its queue overflows is dropped (1008).
    public func send(text: String) {
        let bytes = Array(text.utf8)
        loop.execute { [self] in enqueue(opcode: UInt8(WSLAY_TEXT_FRAME.rawValue), bytes) }
    }

    /// Queues a binary message.
    public func send(binary: [UInt8]) {
        loop.execute { [self] in enqueue(opcode: UInt8(WSLAY_BINARY_FRAME.rawValue), binary) }
    }

    /// Queues a ping (the peer's pong shows up as activity; see ``WebSocketConfiguration``).
    public func ping() {
        loop.execute { [self] in
            guard phase == .open, let context = liveContext() else { return }
            var message = wslay_event_msg(opcode: UInt8(WSLAY_PING.rawValue), msg: nil, msg_length: 0)
            _ = wslay_event_queue_msg(context, &message)
            flush()
        }
    }

    /// Starts the close handshake; the socket is released when the peer answers or after
    /// `closeTimeout`.
    public func close(code: WebSocketCloseCode = .normal, reason: String = "") {
        loop.execute { [self] in startClose(code: code, reason: reason) }
    }

    // MARK: Loop-thread API (for owners that batch work in one hop, like the server hub)

    /// Wraps a socket libmicrohttpd upgraded. Call ``startOnLoop()`` on the loop thread.
    /// - Parameter release: gives the socket back to its owner, who closes it (the HTTP
    ///   server closes the descriptor it handed over, or hands it back to libmicrohttpd).
    public static func server(socket: Int32, bufferedInput: [UInt8], configuration: WebSocketConfiguration,
                              loop: EventLoop, handlers: Handlers,
                              release: @escaping @Sendable () -> Void) -> WebSocketConnection {
        WebSocketConnection(descriptor: socket, role: .server, configuration: configuration, loop: loop,
                            bufferedInput: bufferedInput, handlers: handlers, release: release)
    }

    /// Starts serving the socket. Loop thread only.
    public func startOnLoop() {
        precondition(loop.isInLoop, "startOnLoop() must run on the event loop")
        start()
    }

    /// ``send(text:)`` without the hop, for UTF-8 bytes already encoded once for many
    /// sockets. Loop thread only.
    public func sendOnLoop(text utf8: [UInt8]) {
        assert(loop.isInLoop)
        enqueue(opcode: UInt8(WSLAY_TEXT_FRAME.rawValue), utf8)
    }

    /// A frame built once for many sockets (a broadcast). An idle socket — no wslay
    /// context, nothing waiting to be written — takes its bytes straight from `frame`,
    /// with no framing state made and freed for it; what its kernel buffer does not take
    /// waits in `rawPending`. A busy socket frames the message through wslay as usual.
    /// Loop thread only.
    public func sendOnLoop(frame: ServerFrame) {
        assert(loop.isInLoop)
        guard role == .server, phase == .open, context == nil, heldCount == 0, rawPending.isEmpty, !receiving else {
            return enqueue(opcode: frame.opcode, frame.payload)
        }
        let sent = frame.bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent == frame.bytes.count { return }
        if sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            return finish(fallback: (.abnormal, "connection lost"))
        }
        rawPending = frame.bytes
        rawPendingOffset = max(0, sent)
        update()
    }

    /// ``send(binary:)`` without the hop (an echo answering from its handler). Loop thread only.
    public func sendOnLoop(binary bytes: [UInt8]) {
        assert(loop.isInLoop)
        enqueue(opcode: UInt8(WSLAY_BINARY_FRAME.rawValue), bytes)
    }

    /// ``close(code:reason:)`` without the hop. Loop thread only.
    public func closeOnLoop(code: WebSocketCloseCode, reason: String) {
        assert(loop.isInLoop)
        startClose(code: code, reason: reason)
    }

    /// Fails the connection (RFC 6455 §7.1.7): our close frame with `code`, and nothing
    /// more is read or handed to the handlers; what the peer still sends is discarded
    /// while the frame gets out (a lingering close), then the socket is released. For a
    /// peer that must not cost us parsing any more (a flood). Loop thread only.
    public func failOnLoop(code: WebSocketCloseCode, reason: String) {
        assert(loop.isInLoop)
        guard phase == .open || phase == .closing else { return }
        failConnection(code, reason)
        flush()
    }

    /// Releases the socket at once, without waiting for a close handshake. Loop thread only.
    public func abortOnLoop(code: WebSocketCloseCode, reason: String) {
        assert(loop.isInLoop)
        abort(code: code, reason: reason)
    }

    /// Whether messages can still be sent. Loop thread only.
    public var isOpenOnLoop: Bool { phase == .open }

    /// Whether wslay's buffers are allocated now (an idle socket holds none). Loop thread only.
    public var holdsFramingStateOnLoop: Bool { context != nil }

    // MARK: Loop thread

    /// Registers the socket with the loop. Returns false when the loop refused it.
    @discardableResult
    func start() -> Bool {
        assert(loop.isInLoop)
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        watchedEvents = EPOLLIN.rawValue
        guard loop.register(descriptor, handler: self, events: watchedEvents) else {
            finish(fallback: (.abnormal, "cannot watch socket"))
            return false
        }
        handlers.onOpen(self)
        // Frames may already wait in the bytes the HTTP layer read ahead.
        if phase != .closed && bufferedOffset < bufferedInput.count { handle(events: EPOLLIN.rawValue) }
        armTimer()
        return true
    }

    /// Takes over a descriptor the loop already watches (client handshake → WebSocket).
    func adopt(watching events: UInt32) {
        assert(loop.isInLoop)
        watchedEvents = events
        loop.replaceHandler(descriptor, with: self)
        handlers.onOpen(self)
        update()
        if phase != .closed && bufferedOffset < bufferedInput.count { handle(events: EPOLLIN.rawValue) }
        armTimer()
    }

    /// Queues a message, on the loop thread: the hub's broadcast calls this directly.
    func enqueue(opcode: UInt8, _ bytes: [UInt8]) {
        guard phase == .open, let context = liveContext() else { return }
        let queuedBytes = Int(wslay_event_get_queued_msg_length(context)) + (rawPending.count - rawPendingOffset)
        let queuedCount = Int(wslay_event_get_queued_msg_count(context))
        // An empty queue always takes one message, however large: only a backlog means
        // the reader is slow.
        let overflows = queuedBytes > 0 && queuedBytes + bytes.count > configuration.maxQueuedBytes
        if overflows || queuedCount >= configuration.maxQueuedMessages {
            // The peer is not reading. A close frame would wait behind the backlog it is not
            // reading either, so try once and drop the socket now: memory stays bounded.
            localClose = (.policyViolation, "slow consumer")
            _ = wslay_event_queue_close(context, WebSocketCloseCode.policyViolation.rawValue, nil, 0)
            _ = wslay_event_send(context)
            finish(fallback: (.policyViolation, "slow consumer"))
            return
        }
        let status = bytes.withUnsafeBufferPointer { buffer -> Int32 in
            var message = wslay_event_msg(opcode: opcode, msg: buffer.baseAddress, msg_length: buffer.count)
            return wslay_event_queue_msg(context, &message)
        }
        if status != 0 { return }
        flush()
    }

    func handle(events: UInt32) {
        guard phase != .closed else { return }
        if phase == .lingering {
            drainWhileLingering()
            return
        }
        let readable = events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
        if readable, let context = liveContext(), wslay_event_want_read(context) != 0 {
            receiving = true
            let status = wslay_event_recv(context)
            receiving = false
            if let deferredFinish {
                finish(fallback: deferredFinish)
                return
            }
            if status != 0 {
                finish(fallback: (.abnormal, "connection lost"))
                return
            }
        }
        flush()
    }

    func tick(now: UInt64) {
        if now >= armedAt { armedAt = .max }
        defer { armTimer() }
        guard phase != .closed else { return }
        if phase == .lingering {
            if let lingerStartedAt, now &- lingerStartedAt > configuration.closeTimeout.nanoseconds {
                finish(fallback: lingerFallback ?? (.abnormal, "close timeout"))
            }
            return
        }
        if let closeStartedAt, now &- closeStartedAt > configuration.closeTimeout.nanoseconds {
            let fallback = localClose ?? (.abnormal, "close timeout")
            // The peer never answered our close frame — it may be busy writing (a flood
            // whose tail is still in flight). Our frame may still sit in the kernel's send
            // buffer: linger so it is delivered rather than reset away.
            if let context, wslay_event_get_close_sent(context) != 0 {
                linger(fallback: fallback)
            } else {
                finish(fallback: fallback)
            }
            return
        }
        guard phase == .open, let interval = configuration.pingInterval else { return }
        if let pingSentAt {
            if now &- pingSentAt > configuration.pongTimeout.nanoseconds {
                // The pong may be waiting unread: one wake-up of the loop handles at most
                // a batch of ready sockets, and on a busy loop this one's turn may not have
                // come yet. Read first; an answer counts.
                handle(events: EPOLLIN.rawValue)
                guard phase == .open, self.pingSentAt != nil else { return }
                // A peer that does not answer will not read a close frame either: tell it
                // once, best effort, and let go.
                localClose = (.abnormal, "ping timeout")
                if let context = liveContext() {
                    _ = wslay_event_queue_close(context, WebSocketCloseCode.goingAway.rawValue, nil, 0)
                    _ = wslay_event_send(context)
                }
                finish(fallback: (.abnormal, "ping timeout"))
            }
        } else if now &- lastReceived >= interval.nanoseconds, let context = liveContext() {
            pingSentAt = now
            var message = wslay_event_msg(opcode: UInt8(WSLAY_PING.rawValue), msg: nil, msg_length: 0)
            _ = wslay_event_queue_msg(context, &message)
            flush()
        }
    }

    /// Sends what wslay has queued, then watches the socket for exactly what is still
    /// needed: `EPOLLIN` while wslay reads, `EPOLLOUT` only while a send would block.
    func flush() {
        guard phase == .open || phase == .closing, !receiving else { return }
        guard drainRawPending() else { return finish(fallback: (.abnormal, "connection lost")) }
        if !rawPending.isEmpty { return update() }
        if let context, wslay_event_want_write(context) != 0 && wslay_event_send(context) != 0 {
            finish(fallback: (.abnormal, "connection lost"))
            return
        }
        update()
    }

    /// Writes what is left of a prebuilt frame. False when the socket failed.
    private func drainRawPending() -> Bool {
        while rawPendingOffset < rawPending.count {
            let sent = rawPending[rawPendingOffset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                rawPendingOffset += sent
                continue
            }
            if sent < 0 && errno == EINTR { continue }
            return sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
        rawPending = []
        rawPendingOffset = 0
        return true
    }

    private func update() {
        guard phase == .open || phase == .closing else { return }
        // Without a context the socket is idle and open: it reads, and has nothing to write
        // but the rest of a prebuilt frame.
        let wantRead = context.map { wslay_event_want_read($0) != 0 } ?? true
        let wantWrite = !rawPending.isEmpty || (context.map { wslay_event_want_write($0) != 0 } ?? false)
        if !wantRead && !wantWrite {
            // Close frames went both ways (or we gave up reading after an error and our
            // close frame is out): the WebSocket is over. A peer that sent its close frame
            // sends nothing after it; one that did not (we failed the connection, 1007/1008)
            // may still be writing, and closing on its unread bytes would reset ours away.
            if wslay_event_get_close_received(context) == 0 && wslay_event_get_close_sent(context) != 0 {
                linger(fallback: localClose ?? (.normal, ""))
            } else {
                finish(fallback: localClose ?? (.normal, ""))
            }
            return
        }
        let events = (wantRead ? EPOLLIN.rawValue : 0) | (wantWrite ? EPOLLOUT.rawValue : 0)
        if events != watchedEvents {
            watchedEvents = events
            loop.modify(descriptor, events: events)
        }
        armTimer()
        releaseIdleContext()
    }

    /// wslay's context, made when the socket needs one again (bytes to read, a message to
    /// send, a close to start). Nil once the socket is closed.
    func liveContext() -> wslay_event_context_ptr? {
        if let context { return context }
        guard phase == .open || phase == .closing else { return nil }
        var callbacks = Self.wslayCallbacks
        let user = Unmanaged.passUnretained(self).toOpaque()
        let status = role == .server
            ? wslay_event_context_server_init(&context, &callbacks, user)
            : wslay_event_context_client_init(&context, &callbacks, user)
        precondition(status == 0, "wslay_event_context_init failed (out of memory)")
        wslay_event_config_set_max_recv_msg_length(context, UInt64(configuration.maxMessageSize))
        inputFed = 0
        inputFramed = 0
        frameBytes = 0
        messageOpen = false
        return context
    }

    /// Frees wslay's context when a fresh one would behave the same: the socket is open,
    /// every byte read belongs to a whole frame already handled, no fragmented message is
    /// half-assembled, and nothing waits to be written. An idle socket then costs its
    /// descriptor and this object, not wslay's two 4 KiB buffers.
    private func releaseIdleContext() {
        guard phase == .open, !receiving, deferredFinish == nil, heldCount == 0, let context,
              inputFed == inputFramed, !messageOpen, bufferedOffset >= bufferedInput.count,
              wslay_event_want_write(context) == 0, wslay_event_want_read(context) != 0,
              wslay_event_get_close_sent(context) == 0, wslay_event_get_close_received(context) == 0 else { return }
        wslay_event_context_free(context)
        self.context = nil
    }

    /// The next time ``tick(now:)`` has work: a close or linger timeout, a pong overdue,
    /// or the ping of a socket quiet for `pingInterval`. Activity only moves
    /// `lastReceived`: the tick at the old time finds the socket busy and asks again for
    /// later, so a busy socket costs one wake-up per interval, an idle one one per ping.
    private func nextDeadline() -> UInt64? {
        switch phase {
        case .closed: return nil
        case .lingering: return lingerStartedAt.map { $0 &+ configuration.closeTimeout.nanoseconds &+ 1 }
        case .closing, .open:
            if let closeStartedAt { return closeStartedAt &+ configuration.closeTimeout.nanoseconds &+ 1 }
            guard phase == .open, let interval = configuration.pingInterval else { return nil }
            if let pingSentAt { return pingSentAt &+ configuration.pongTimeout.nanoseconds &+ 1 }
            return lastReceived &+ interval.nanoseconds
        }
    }

    /// Asks the loop for a tick at ``nextDeadline()`` unless one at or before it is pending.
    func armTimer() {
        guard let due = nextDeadline(), due < armedAt else { return }
        armedAt = due
        loop.wake(self, descriptor: descriptor, at: due)
    }
}

extension WebSocketConnection: EventLoopHandler {}
#endif
