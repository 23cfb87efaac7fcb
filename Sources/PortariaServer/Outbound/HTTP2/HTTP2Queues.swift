import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Owns the two ends of a non-blocking pipe: how callers wake the I/O thread out of `poll`.
final class WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw OutboundHTTPError.transport("pipe: \(String(cString: strerror(errno)))") }
        readEnd = ends[0]
        writeEnd = ends[1]
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
    }

    func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(writeEnd, &byte, 1)
    }

    func drain() {
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while withUnsafeMutableBytes(of: &buffer, { Glibc.read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

/// A FIFO of waiting requests with O(1) removal at the front and re-insertion there.
struct Deque {
    private var items: [HTTP2Exchange] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func append(_ exchange: HTTP2Exchange) { items.append(exchange) }

    mutating func prepend(_ exchange: HTTP2Exchange) {
        if head > 0 {
            head -= 1
            items[head] = exchange
        } else {
            items.insert(exchange, at: 0)
        }
    }

    mutating func popFirst() -> HTTP2Exchange? {
        guard head < items.count else { return nil }
        let exchange = items[head]
        head += 1
        // Drop what was taken once it is most of the array (amortised O(1)).
        if head > 1024, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return exchange
    }

    mutating func removeAll(where shouldRemove: (HTTP2Exchange) -> Bool) {
        items = Array(items[head...]).filter { !shouldRemove($0) }
        head = 0
    }

    mutating func failAll(_ error: any Error) {
        while let exchange = popFirst() { exchange.finish(.failure(error)) }
    }
}
