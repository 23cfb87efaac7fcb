import CCurl
import Foundation
import PortariaCore

/// Outbound HTTP(S) on libcurl (webhooks, OAuth token requests). Blocking transfers run
/// on a dedicated queue. `caFile` adds a CA bundle (tests use a local CA).
public final class OutboundHTTPClient: Sendable {
    let caFile: String?
    /// Blocking transfers (libcurl easy) on threads of their own; see `BlockingQueues`.
    private static let queues = BlockingQueues(label: "portaria.outbound", count: 8)
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(caFile: String? = nil) {
        self.caFile = caFile
        _ = Self.globalInit
    }

    public func send(_ request: OutboundRequest) async throws -> OutboundResponse {
        let caFile = caFile
        return try await Self.queues.run { try Self.perform(request, caFile: caFile) }
    }

    /// Accumulates a transfer's output; one per transfer, used only by its thread.
    private final class Sink {
        var body: [UInt8] = []
        var headers: [String: String] = [:]
    }

    private static func perform(_ request: OutboundRequest, caFile: String?) throws -> OutboundResponse {
        guard let handle = curl_easy_init() else { throw OutboundHTTPError.transport("curl_easy_init failed") }
        defer { curl_easy_cleanup(handle) }
        let sink = Sink()
        var headerList: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers { headerList = curl_slist_append(headerList, "\(name): \(value)") }
        defer { curl_slist_free_all(headerList) }
        _ = portaria_curl_set_string(handle, CURLOPT_URL, request.url)
        _ = portaria_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        _ = portaria_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = portaria_curl_set_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000))
        _ = portaria_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT_MS, 5000)
        _ = portaria_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        if let caFile { _ = portaria_curl_set_string(handle, CURLOPT_CAINFO, caFile) }
        _ = portaria_curl_set_slist(handle, CURLOPT_HTTPHEADER, headerList)
        if !request.body.isEmpty || request.method == "POST" {
            let code = request.body.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    portaria_curl_set_post_body(handle, $0.baseAddress, $0.count)
                }
            }
            guard code == CURLE_OK else { throw OutboundHTTPError.transport("cannot set body") }
        }
        let opaque = Unmanaged.passUnretained(sink).toOpaque()
        _ = portaria_curl_set_write_function(handle) { data, size, count, context in
            let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            if let data { data.withMemoryRebound(to: UInt8.self, capacity: length) { sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) } }
            return length
        }
        _ = portaria_curl_set_pointer(handle, CURLOPT_WRITEDATA, opaque)
        _ = portaria_curl_set_header_function(handle) { data, size, count, context in
            let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            if let data, let line = String(bytes: UnsafeRawBufferPointer(start: data, count: length), encoding: .utf8),
               let colon = line.firstIndex(of: ":") {
                sink.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return length
        }
        _ = portaria_curl_set_pointer(handle, CURLOPT_HEADERDATA, opaque)
        let result = withExtendedLifetime(sink) { curl_easy_perform(handle) }
        guard result == CURLE_OK else {
            throw OutboundHTTPError.transport(String(cString: curl_easy_strerror(result)))
        }
        return OutboundResponse(status: portaria_curl_response_code(handle), headers: sink.headers, body: sink.body)
    }
}
