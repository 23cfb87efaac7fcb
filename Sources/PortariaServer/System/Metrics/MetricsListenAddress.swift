/// `--metrics-listen HOST:PORT` (`[v6]:PORT` for IPv6).
struct MetricsListenAddress: Equatable {
    let host: String
    let port: UInt16

    static func parse(_ text: String) throws -> MetricsListenAddress {
        let usage = UsageError("--metrics-listen must be HOST:PORT (e.g. 127.0.0.1:9464 or [::1]:9464), got '\(text.prefix(80))'")
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw usage }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw usage }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = UInt16(portText) else { throw usage }
        return MetricsListenAddress(host: String(host), port: port)
    }

    /// Whether this address would share a socket with the public listener: the same port
    /// on the same address, or on a wildcard address that covers the other.
    func overlaps(host publicHost: String, port publicPort: UInt16) -> Bool {
        guard port == publicPort, port != 0 else { return false }
        let wildcards: Set<String> = ["0.0.0.0", "::", ""]
        func normalized(_ host: String) -> String { host == "localhost" ? "127.0.0.1" : host }
        let (a, b) = (normalized(host), normalized(publicHost))
        return a == b || wildcards.contains(a) || wildcards.contains(b)
    }
}
