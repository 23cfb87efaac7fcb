#if canImport(Glibc)
import CWslay
import Glibc

// How a WebSocket ends: the close handshake we start, the lingering close that keeps our
// close frame from being reset away, and the one release of the socket that reports the
// close to the owner. All of it runs on the loop thread.
extension WebSocketConnection {
    func startClose(code: WebSocketCloseCode, reason: String) {
        guard phase == .open, let context = liveContext() else { return }
        phase = .closing
        closeStartedAt = MonotonicClock.now()
        localClose = (code, reason)
        // RFC 6455 §5.5: control frame payloads are at most 125 bytes, 2 of them the code.
        let reasonBytes = Array(reason.utf8.prefix(123))
        _ = reasonBytes.withUnsafeBufferPointer {
            wslay_event_queue_close(context, code.rawValue, $0.baseAddress, $0.count)
        }
        flush()
    }

    /// Drops the socket without a handshake (used when the loop's owner stops).
    func abort(code: WebSocketCloseCode, reason: String) {
        localClose = (code, reason)
        finish(fallback: (code, reason))
    }

    /// A lingering close. Closing a socket whose receive buffer holds unread bytes makes
    /// the kernel send a reset, and a reset discards whatever of ours is still queued for
    /// the peer — our close frame included, so the peer sees 1006 instead of our code. So:
    /// shut down our side (the peer reads everything we sent, then end of stream), read
    /// and discard what it still sends, and release the socket at its end of stream or
    /// after `closeTimeout`, whichever comes first. Nothing read here is kept.
    func linger(fallback: (code: WebSocketCloseCode, reason: String)) {
        guard phase == .open || phase == .closing else { return }
        // Only update() and tick() linger, and neither runs inside wslay_event_recv.
        assert(!receiving, "linger during a receive")
        phase = .lingering
        lingerStartedAt = MonotonicClock.now()
        lingerFallback = fallback
        armTimer()
        if Glibc.shutdown(descriptor, Int32(SHUT_WR)) != 0 {
            finish(fallback: fallback)
            return
        }
        if watchedEvents != EPOLLIN.rawValue {
            watchedEvents = EPOLLIN.rawValue
            loop.modify(descriptor, events: watchedEvents)
        }
        drainWhileLingering()
    }

    /// Reads and discards, at most `lingerReadBudget` bytes per wake-up so one flooding
    /// peer cannot hold the loop; releases the socket at end of stream or on an error.
    func drainWhileLingering() {
        guard phase == .lingering else { return }
        let fallback = lingerFallback ?? (.normal, "")
        var drained = 0
        let ended = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 * 1024) { scratch -> Bool in
            while drained < Self.lingerReadBudget {
                let received = recv(descriptor, scratch.baseAddress, scratch.count, 0)
                if received > 0 {
                    drained += received
                    continue
                }
                if received < 0 && errno == EINTR { continue }
                if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return false }
                return true // end of stream, or the peer reset: nothing left to wait for
            }
            return false
        }
        if ended { finish(fallback: fallback) }
    }

    private static let lingerReadBudget = 256 * 1024

    /// Releases the socket and reports the close once.
    func finish(fallback: (code: WebSocketCloseCode, reason: String)) {
        guard phase != .closed else { return }
        if receiving {
            if deferredFinish == nil { deferredFinish = fallback }
            return
        }
        phase = .closed
        loop.unregister(descriptor)
        let release = self.release
        self.release = nil
        release?()
        // wslay fails connections itself (1002, 1009): then the code it sent is the reason.
        let sentByWslay = context.flatMap { context -> (code: WebSocketCloseCode, reason: String)? in
            guard wslay_event_get_close_sent(context) != 0 else { return nil }
            let code = wslay_event_get_status_code_sent(context)
            return code == 0 ? nil : (WebSocketCloseCode(code), "")
        }
        let (code, reason) = receivedClose ?? localClose ?? sentByWslay ?? fallback
        let handlers = self.handlers
        self.handlers = Handlers()
        handlers.onClose(self, code, reason)
    }
}
#endif
