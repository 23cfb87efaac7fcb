#if canImport(Glibc)
import CWslay
import Glibc

// What wslay does on the socket and hands up: reads (bytes the HTTP layer already read
// first), writes (a frame's header and payload leave in one `sendmsg`), whole messages
// for the handlers, and failing the connection on a bad one. All of it runs on the loop
// thread, inside wslay_event_recv / wslay_event_send.
extension WebSocketConnection {
    /// The callbacks of every connection's wslay context; `user` is the connection.
    static var wslayCallbacks: wslay_event_callbacks {
        wslay_event_callbacks(
            recv_callback: webSocketReceive, send_callback: webSocketSend,
            genmask_callback: webSocketGenerateMask, on_frame_recv_start_callback: webSocketFrameStart,
            on_frame_recv_chunk_callback: nil, on_frame_recv_end_callback: webSocketFrameEnd,
            on_msg_recv_callback: webSocketMessage)
    }

    fileprivate func receive(into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int {
        if deferredFinish != nil {
            // A handler dropped the connection: stop reading at once.
            wslay_event_set_error(context, WSLAY_ERR_CALLBACK_FAILURE.rawValue)
            return -1
        }
        if bufferedOffset < bufferedInput.count {
            let length = min(count, bufferedInput.count - bufferedOffset)
            bufferedInput.withUnsafeBufferPointer {
                buffer.update(from: $0.baseAddress! + bufferedOffset, count: length)
            }
            bufferedOffset += length
            if bufferedOffset == bufferedInput.count { bufferedInput = []; bufferedOffset = 0 }
            noteActivity()
            inputFed &+= UInt64(length)
            return length
        }
        while true {
            let received = recv(descriptor, buffer, count, 0)
            if received > 0 {
                noteActivity()
                inputFed &+= UInt64(received)
                return received
            }
            if received < 0 && errno == EINTR { continue }
            let wouldBlock = received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            wslay_event_set_error(context, wouldBlock ? WSLAY_ERR_WOULDBLOCK.rawValue : WSLAY_ERR_CALLBACK_FAILURE.rawValue)
            return -1
        }
    }

    fileprivate func send(_ data: UnsafePointer<UInt8>, count: Int, more: Bool) -> Int {
        if more && heldCount == 0 && count <= MemoryLayout.size(ofValue: heldChunk) {
            withUnsafeMutableBytes(of: &heldChunk) { $0.baseAddress!.copyMemory(from: data, byteCount: count) }
            heldCount = count
            return count
        }
        let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        while true {
            let sent: Int
            let held = heldCount
            if held > 0 {
                sent = withUnsafeMutableBytes(of: &heldChunk) { heldBytes in
                    var parts = [iovec(iov_base: heldBytes.baseAddress, iov_len: held),
                                 iovec(iov_base: UnsafeMutableRawPointer(mutating: data), iov_len: count)]
                    return parts.withUnsafeMutableBufferPointer { vectors in
                        var message = msghdr()
                        message.msg_iov = vectors.baseAddress
                        message.msg_iovlen = 2
                        return sendmsg(descriptor, &message, flags)
                    }
                }
            } else {
                sent = Glibc.send(descriptor, data, count, flags)
            }
            if sent < 0 {
                if errno == EINTR { continue }
                let wouldBlock = errno == EAGAIN || errno == EWOULDBLOCK
                wslay_event_set_error(context, wouldBlock ? WSLAY_ERR_WOULDBLOCK.rawValue : WSLAY_ERR_CALLBACK_FAILURE.rawValue)
                return -1
            }
            guard held > 0 else { return sent }
            if sent < held {
                // Part of the held chunk left: keep the rest; wslay will offer `data` again.
                withUnsafeMutableBytes(of: &heldChunk) { bytes in
                    let base = bytes.baseAddress!
                    base.copyMemory(from: base + sent, byteCount: held - sent)
                }
                heldCount = held - sent
                wslay_event_set_error(context, WSLAY_ERR_WOULDBLOCK.rawValue)
                return -1
            }
            heldCount = 0
            if sent == held {
                wslay_event_set_error(context, WSLAY_ERR_WOULDBLOCK.rawValue)
                return -1
            }
            return sent - held
        }
    }

    /// Any bytes from the peer prove it is alive; a pong needs no special treatment.
    func noteActivity() {
        lastReceived = MonotonicClock.now()
        pingSentAt = nil
    }

    fileprivate func received(opcode: UInt8, payload: UnsafeBufferPointer<UInt8>, statusCode: UInt16) {
        switch UInt32(opcode) {
        case WSLAY_TEXT_FRAME.rawValue:
            // RFC 6455 §8.1: a text message that is not UTF-8 fails the connection with 1007.
            guard let text = String(validating: payload, as: UTF8.self) else {
                failConnection(.invalidPayload, "invalid UTF-8 in a text message")
                return
            }
            handlers.onText(self, text)
        case WSLAY_BINARY_FRAME.rawValue:
            handlers.onBinary(self, Array(payload))
        case WSLAY_CONNECTION_CLOSE.rawValue:
            // wslay answers the close frame itself; we only remember what the peer said.
            let reasonBytes = payload.count > 2 ? UnsafeBufferPointer(rebasing: payload[2...]) : UnsafeBufferPointer(start: nil, count: 0)
            let reason = String(decoding: reasonBytes, as: UTF8.self)
            receivedClose = (statusCode == 0 ? .noStatus : WebSocketCloseCode(statusCode), reason)
            if phase == .open { phase = .closing; closeStartedAt = MonotonicClock.now() }
        default:
            break // ping (answered by wslay) and pong (counted as activity)
        }
    }

    /// A frame begins: remember its size on the wire so its end accounts for every byte
    /// of it. wslay accepts only minimal length encodings and refuses a client frame
    /// without a mask (and a server frame with one), so the header size follows from the
    /// payload length and the role.
    fileprivate func frameStarted(opcode: UInt8, fin: Bool, payloadLength: UInt64) {
        let extended: UInt64 = payloadLength < 126 ? 0 : (payloadLength < 65_536 ? 2 : 8)
        frameBytes = 2 + extended + (role == .server ? 4 : 0) + payloadLength
        // Data frames open or close a message; control frames may come between fragments.
        if opcode & 0x8 == 0 { messageOpen = !fin }
    }

    fileprivate func frameEnded() {
        inputFramed &+= frameBytes
        frameBytes = 0
    }

    /// Fails the connection (RFC 6455 §7.1.7): close frame with `code`, stop reading.
    func failConnection(_ code: WebSocketCloseCode, _ reason: String) {
        guard let context = liveContext() else { return }
        if phase == .open { phase = .closing; closeStartedAt = MonotonicClock.now() }
        localClose = (code, reason)
        let reasonBytes = Array(reason.utf8.prefix(123))
        _ = reasonBytes.withUnsafeBufferPointer {
            wslay_event_queue_close(context, code.rawValue, $0.baseAddress, $0.count)
        }
        wslay_event_shutdown_read(context)
    }
}

// C callbacks: free functions so they capture nothing and carry no actor isolation.

private func connection(_ user: UnsafeMutableRawPointer?) -> WebSocketConnection {
    Unmanaged<WebSocketConnection>.fromOpaque(user!).takeUnretainedValue()
}

private func webSocketReceive(_ context: wslay_event_context_ptr?, _ buffer: UnsafeMutablePointer<UInt8>?,
                              _ length: Int, _ flags: Int32, _ user: UnsafeMutableRawPointer?) -> Int {
    connection(user).receive(into: buffer!, count: length)
}

private func webSocketSend(_ context: wslay_event_context_ptr?, _ data: UnsafePointer<UInt8>?,
                           _ length: Int, _ flags: Int32, _ user: UnsafeMutableRawPointer?) -> Int {
    connection(user).send(data!, count: length, more: flags & Int32(WSLAY_MSG_MORE.rawValue) != 0)
}

private func webSocketGenerateMask(_ context: wslay_event_context_ptr?, _ buffer: UnsafeMutablePointer<UInt8>?,
                                   _ length: Int, _ user: UnsafeMutableRawPointer?) -> Int32 {
    // Masking defeats cache poisoning by proxies, it is not secrecy: the system generator
    // (getrandom) is plenty and cheaper than a call into OpenSSL per frame.
    var generator = SystemRandomNumberGenerator()
    for index in 0..<length { buffer![index] = UInt8.random(in: 0...255, using: &generator) }
    return 0
}

private func webSocketFrameStart(_ context: wslay_event_context_ptr?, _ argument: UnsafePointer<wslay_event_on_frame_recv_start_arg>?,
                                 _ user: UnsafeMutableRawPointer?) {
    let argument = argument!.pointee
    connection(user).frameStarted(opcode: argument.opcode, fin: argument.fin != 0, payloadLength: argument.payload_length)
}

private func webSocketFrameEnd(_ context: wslay_event_context_ptr?, _ user: UnsafeMutableRawPointer?) {
    connection(user).frameEnded()
}

private func webSocketMessage(_ context: wslay_event_context_ptr?, _ argument: UnsafePointer<wslay_event_on_msg_recv_arg>?,
                              _ user: UnsafeMutableRawPointer?) {
    let argument = argument!.pointee
    connection(user).received(opcode: argument.opcode,
                              payload: UnsafeBufferPointer(start: argument.msg, count: argument.msg_length),
                              statusCode: argument.status_code)
}
#endif
