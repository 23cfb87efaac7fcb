/// One stream's answer as nghttp2's header and data callbacks deliver it: the status, the
/// headers and the body, each bounded. Pure (no nghttp2), so fuzz/targets/PushResponseTarget.swift
/// compiles it and feeds it what a provider could send.
struct HTTP2ResponseParts {
    /// A response body larger than this resets the stream: provider answers are small JSON.
    static let bodyLimit = 1 << 20
    /// Header names and values kept, in bytes, counted as they arrive (a name sent twice
    /// counts twice). nghttp2 bounds one header block, not how many interim (1xx) blocks
    /// and trailers may follow; providers send a few hundred bytes.
    static let headerLimit = 64 << 10

    let bodyLimit: Int
    let headerLimit: Int
    /// The `:status` pseudo-header: three digits, 100…999; 0 until one arrived (or when it
    /// was not three digits, which nghttp2 refuses before we see it).
    private(set) var status = 0
    /// Regular headers by name (HTTP/2 names are lowercase on the wire; nghttp2 rejects
    /// others); a later value of a name replaces the earlier one.
    private(set) var headers: [String: String] = [:]
    private(set) var headerBytes = 0
    private(set) var body: [UInt8] = []

    init(bodyLimit: Int = Self.bodyLimit, headerLimit: Int = Self.headerLimit) {
        self.bodyLimit = bodyLimit
        self.headerLimit = headerLimit
    }

    /// One header field. Pseudo-headers other than `:status` are ignored; headers past
    /// `headerLimit` are dropped.
    mutating func header(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if name.elementsEqual(":status".utf8) {
            status = Self.statusCode(value)
            return
        }
        guard name.first != UInt8(ascii: ":") else { return }
        let (size, overflow) = name.count.addingReportingOverflow(value.count)
        guard !overflow, size <= headerLimit - headerBytes else { return }
        headerBytes += size
        headers[String(decoding: name, as: UTF8.self)] = String(decoding: value, as: UTF8.self)
    }

    /// Appends one DATA chunk. False when the body would pass `bodyLimit`: nothing of the
    /// chunk is kept, and the caller resets the stream.
    mutating func append(_ chunk: UnsafeBufferPointer<UInt8>) -> Bool {
        guard chunk.count <= bodyLimit - body.count else { return false }
        body.append(contentsOf: chunk)
        return true
    }

    /// RFC 9110 §15: a status code is three digits.
    static func statusCode(_ value: UnsafeBufferPointer<UInt8>) -> Int {
        guard value.count == 3 else { return 0 }
        var code = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return 0 }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return code >= 100 ? code : 0
    }

    var response: OutboundResponse { OutboundResponse(status: status, headers: headers, body: body) }
}
