// `RealtimeTransport` over URLSessionWebSocketTask (Linux uses the wslay client instead).
#if canImport(Darwin)
import Foundation
import PortariaClient

/// Opens `/v1/realtime` with `URLSessionWebSocketTask`. The handshake is confirmed by a
/// first ping: a refused upgrade (401 → the core refreshes the token) surfaces there with
/// the HTTP status; silence is "unreachable" and the core reconnects with backoff.
public struct URLSessionRealtimeTransport: RealtimeTransport {
    public var pingInterval: Duration
    public var pongTimeout: Duration

    public init(pingInterval: Duration = .seconds(20), pongTimeout: Duration = .seconds(10)) {
        self.pingInterval = pingInterval
        self.pongTimeout = pongTimeout
    }

    public func connect(url: URL, headers: [String: String]) async throws(RealtimeConnectError) -> any RealtimeConnection {
        var request = URLRequest(url: url, timeoutInterval: 15)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = URLSession.shared.webSocketTask(with: request)
        task.resume()
        let opened: (any Error)? = await withCheckedContinuation { continuation in
            task.sendPing { error in continuation.resume(returning: error) }
        }
        if let opened {
            let status = (task.response as? HTTPURLResponse)?.statusCode ?? 0
            task.cancel()
            if status > 0 && status != 101 { throw .rejected(status: status) }
            throw .unreachable(opened.localizedDescription)
        }
        return URLSessionRealtimeConnection(task: task, pingInterval: pingInterval, pongTimeout: pongTimeout)
    }
}

/// One open socket: a receive loop feeding `messages`, and pings so a network that
/// vanished without a FIN is noticed within `pingInterval + pongTimeout`.
final class URLSessionRealtimeConnection: RealtimeConnection, @unchecked Sendable {
    // The task is thread-safe; the tasks below only read it.
    private let task: URLSessionWebSocketTask
    let messages: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    private var loops: [Task<Void, Never>] = []
    private let lock = NSLock()

    init(task: URLSessionWebSocketTask, pingInterval: Duration, pongTimeout: Duration) {
        self.task = task
        (messages, continuation) = AsyncStream.makeStream(of: String.self)
        let continuation = continuation
        let receive = Task {
            while !Task.isCancelled {
                do {
                    switch try await task.receive() {
                    case .string(let text): continuation.yield(text)
                    case .data(let data): continuation.yield(String(decoding: data, as: UTF8.self))
                    @unknown default: break
                    }
                } catch {
                    continuation.finish()
                    return
                }
            }
        }
        let ping = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: pingInterval)
                if Task.isCancelled { return }
                let answered = await Self.ping(task, timeout: pongTimeout)
                if !answered {
                    task.cancel(with: .goingAway, reason: nil)
                    continuation.finish()
                    return
                }
            }
        }
        loops = [receive, ping]
        continuation.onTermination = { _ in
            receive.cancel()
            ping.cancel()
        }
    }

    private static func ping(_ task: URLSessionWebSocketTask, timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    task.sendPing { error in continuation.resume(returning: error == nil) }
                }
            }
            group.addTask {
                // A group waits for all its children: on timeout the socket is cancelled,
                // which makes the ping's handler fire (with an error) so the group can end.
                guard (try? await Task.sleep(for: timeout)) != nil, !Task.isCancelled else { return false }
                task.cancel(with: .goingAway, reason: nil)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func send(_ text: String) {
        task.send(.string(text)) { _ in }
    }

    func close() {
        task.cancel(with: .normalClosure, reason: nil)
        continuation.finish()
        lock.withLock { loops.forEach { $0.cancel() } }
    }
}
#endif
