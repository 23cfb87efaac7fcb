import COpenSSL
import Foundation
import PortariaCore
#if canImport(Glibc)
import Glibc
#endif

/// Every OpenSSL failure as one transport error with the library's own words.
func tlsError(_ what: String) -> OutboundHTTPError {
    var detail = ""
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        detail += (detail.isEmpty ? "" : "; ") + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return .transport(detail.isEmpty ? what : "\(what): \(detail)")
}

/// Owns an SSL_CTX: TLS 1.2 or later, the peer's certificate checked against the
/// system's CAs or, when given, only against `caFile` (as libcurl's CAINFO does; the
/// server combines `--ca-file` with the system bundle first, `CABundle`), ALPN "h2".
final class TLSContext {
    let handle: OpaquePointer

    init(caFile: String?) throws {
        guard let handle = SSL_CTX_new(TLS_client_method()) else { throw tlsError("SSL_CTX_new") }
        self.handle = handle
        guard portaria_ssl_ctx_set_min_tls12(handle) == 1 else { throw tlsError("TLS 1.2 minimum") }
        SSL_CTX_set_verify(handle, SSL_VERIFY_PEER, nil)
        if let caFile {
            guard SSL_CTX_load_verify_locations(handle, caFile, nil) == 1 else { throw tlsError("CA file \(caFile)") }
        } else {
            guard SSL_CTX_set_default_verify_paths(handle) == 1 else { throw tlsError("system CA paths") }
        }
        // SSL_write may take part of a buffer (we keep the rest), and the buffer may move
        // between a WANT_WRITE and its retry (it is a Swift array that grows).
        _ = portaria_ssl_ctx_set_mode(handle, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        // SSL_CTX_set_alpn_protos returns 0 on success (unlike the rest of OpenSSL).
        guard SSL_CTX_set_alpn_protos(handle, alpn, UInt32(alpn.count)) == 0 else { throw tlsError("ALPN") }
    }

    deinit { SSL_CTX_free(handle) }
}

/// Owns one SSL connection object over a `TCPSocket`, checking the peer's name exactly
/// (DNS name, or IP address for a literal) as libcurl does.
final class TLSStream {
    let handle: OpaquePointer

    init(context: TLSContext, socket: TCPSocket, origin: Origin) throws {
        guard let handle = SSL_new(context.handle) else { throw tlsError("SSL_new") }
        self.handle = handle
        guard SSL_set_fd(handle, socket.descriptor) == 1 else { throw tlsError("SSL_set_fd") }
        if origin.isIPLiteral {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), origin.host) == 1 else { throw tlsError("peer IP check") }
        } else {
            guard portaria_ssl_set_sni(handle, origin.host) == 1, SSL_set1_host(handle, origin.host) == 1 else {
                throw tlsError("peer name check")
            }
        }
        SSL_set_connect_state(handle)
    }

    enum Progress { case done, wantRead, wantWrite }

    /// One step of the handshake; throws when it failed (certificate, name, protocol).
    func handshake() throws -> Progress {
        let result = SSL_do_handshake(handle)
        if result == 1 { return .done }
        switch SSL_get_error(handle, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            let verify = SSL_get_verify_result(handle)
            if verify != X509_V_OK {
                throw OutboundHTTPError.transport("TLS: peer certificate rejected: \(String(cString: X509_verify_cert_error_string(verify)))")
            }
            throw tlsError("TLS handshake")
        }
    }

    /// Whether the peer chose HTTP/2 in ALPN.
    var negotiatedH2: Bool {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(handle, &data, &length)
        guard let data, length == 2 else { return false }
        return data[0] == UInt8(ascii: "h") && data[1] == UInt8(ascii: "2")
    }

    enum IOResult { case bytes(Int), wantRead, wantWrite, closed(String) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        let result = SSL_read(handle, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 { return .bytes(Int(result)) }
        return outcome(result)
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> IOResult {
        let result = SSL_write(handle, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 { return .bytes(Int(result)) }
        return outcome(result)
    }

    private func outcome(_ result: Int32) -> IOResult {
        let error = SSL_get_error(handle, result)
        switch error {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed("the peer closed the connection")
        case SSL_ERROR_SYSCALL:
            ERR_clear_error()
            return .closed(errno == 0 ? "the peer closed the connection" : String(cString: strerror(errno)))
        default: return .closed(tlsError("TLS").description)
        }
    }

    deinit { SSL_free(handle) }
}
