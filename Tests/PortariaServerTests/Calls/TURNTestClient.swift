import COpenSSL
import Foundation
import PortariaWebSocket
@testable import PortariaServer
#if canImport(Glibc)
import Glibc
#endif

// A minimal STUN/TURN client (RFC 8489, RFC 8656), enough to prove that a credential
// minted by `ICEServerProvider` opens a real allocation on coturn: Binding (to wait
// for the server) and Allocate with the long-term credential mechanism. Written for
// the tests only; every wait has a timeout so a misbehaving server cannot hang them.

struct TURNTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A parsed STUN message.
struct STUNMessage {
    static let magicCookie: UInt32 = 0x2112_A442

    enum Method: UInt16 { case binding = 0x001, allocate = 0x003, refresh = 0x004, createPermission = 0x008 }
    enum Class { case request, indication, success, error }
    enum Attribute: UInt16 {
        case username = 0x0006, messageIntegrity = 0x0008, errorCode = 0x0009
        case lifetime = 0x000D, realm = 0x0014, nonce = 0x0015
        case xorPeerAddress = 0x0012, xorRelayedAddress = 0x0016, requestedTransport = 0x0019, xorMappedAddress = 0x0020
    }

    var type: UInt16
    var transactionID: [UInt8]
    var attributes: [(UInt16, [UInt8])]

    var messageClass: Class {
        // The class bits are C1 (bit 8) and C0 (bit 4) of the type (RFC 8489 §5).
        switch ((type >> 7) & 0x2) | ((type >> 4) & 0x1) {
        case 0: .request
        case 1: .indication
        case 2: .success
        default: .error
        }
    }

    var method: UInt16 { (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2) }

    func attribute(_ attribute: Attribute) -> [UInt8]? {
        attributes.first { $0.0 == attribute.rawValue }?.1
    }

    /// `ERROR-CODE` as a number (401, 438, …).
    var errorCode: Int? {
        guard let value = attribute(.errorCode), value.count >= 4 else { return nil }
        return Int(value[2] & 0x07) * 100 + Int(value[3])
    }

    /// `XOR-RELAYED-ADDRESS` or `XOR-MAPPED-ADDRESS` (IPv4) as `a.b.c.d:port`.
    func xorAddress(_ attribute: Attribute) -> String? {
        guard let value = self.attribute(attribute), value.count == 8, value[1] == 0x01 else { return nil }
        let port = (UInt16(value[2]) << 8 | UInt16(value[3])) ^ UInt16(Self.magicCookie >> 16)
        let cookie = withUnsafeBytes(of: Self.magicCookie.bigEndian, Array.init)
        let address = (0..<4).map { String(value[4 + $0] ^ cookie[$0]) }.joined(separator: ".")
        return "\(address):\(port)"
    }

    static func parse(_ bytes: [UInt8]) throws -> STUNMessage {
        guard bytes.count >= 20, bytes[0] & 0xC0 == 0 else { throw TURNTestError("not a STUN message (\(bytes.count) bytes)") }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard bytes.count >= 20 + length else { throw TURNTestError("truncated STUN message") }
        var attributes: [(UInt16, [UInt8])] = []
        var offset = 20
        while offset + 4 <= 20 + length {
            let type = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let size = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + size <= 20 + length else { throw TURNTestError("attribute overruns the message") }
            attributes.append((type, Array(bytes[(offset + 4)..<(offset + 4 + size)])))
            offset += 4 + (size + 3) / 4 * 4
        }
        return STUNMessage(type: UInt16(bytes[0]) << 8 | UInt16(bytes[1]),
                           transactionID: Array(bytes[8..<20]), attributes: attributes)
    }

    /// Encodes a request. With `integrityKey`, appends MESSAGE-INTEGRITY: HMAC-SHA1
    /// over the message so far, with the header length already counting the 24-byte
    /// attribute (RFC 8489 §14.5).
    static func request(_ method: Method, transactionID: [UInt8], attributes: [(Attribute, [UInt8])],
                        integrityKey: [UInt8]? = nil) -> [UInt8] {
        var body: [UInt8] = []
        for (attribute, value) in attributes {
            body += [UInt8(attribute.rawValue >> 8), UInt8(attribute.rawValue & 0xFF),
                     UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
            body += value
            body += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        }
        func header(length: Int) -> [UInt8] {
            let type = method.rawValue // class "request" adds no bits
            return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)]
                + withUnsafeBytes(of: magicCookie.bigEndian, Array.init) + transactionID
        }
        guard let integrityKey else { return header(length: body.count) + body }
        let signed = header(length: body.count + 24) + body
        let mac = Crypto.hmacSHA1(key: integrityKey, data: signed)
        return signed + [0x00, 0x08, 0x00, 0x14] + mac
    }
}

/// MD5, which the long-term credential key is made of (RFC 8489 §9.2.2). Only here.
func md5(_ data: [UInt8]) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    let ok = data.withUnsafeBufferPointer { EVP_Digest($0.baseAddress, $0.count, &output, &length, EVP_md5(), nil) }
    precondition(ok == 1, "EVP_Digest(MD5) failed")
    return Array(output.prefix(Int(length)))
}

/// One STUN/TURN client connection to 127.0.0.1, over UDP or TCP (STUN over TCP is
/// the same messages back to back, each framed by its own length).
final class STUNConnection {
    enum Transport: String { case udp, tcp }

    let transport: Transport
    /// Closed once, when the connection goes away (also when `init` throws).
    private let socket: OwnedDescriptor
    private var descriptor: Int32 { socket.rawValue }

    /// Connects to 127.0.0.1:`port`; every receive gives up after `timeout`.
    init(port: UInt16, transport: Transport, timeout: Duration = .seconds(2)) throws {
        self.transport = transport
        guard let socket = OwnedDescriptor.socket(family: AF_INET, type: Int32(transport == .udp ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)) else {
            throw TURNTestError("socket() failed: errno \(errno)")
        }
        self.socket = socket
        let seconds = timeout.components.seconds
        var interval = timeval(tv_sec: Int(seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        // A UDP connect() only fixes the peer (and lets ICMP errors surface); for TCP
        // SO_SNDTIMEO bounds the handshake.
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            // No close here: `socket` closes itself as `init` unwinds. Closing it here too
            // closed the number twice, and the second close hit whatever another test had
            // opened in between (a SQLite file, a PostgreSQL connection).
            let code = errno
            throw TURNTestError("connect to 127.0.0.1:\(port)/\(transport) failed: errno \(code)")
        }
    }


    /// Sends `request` and waits for the response with its transaction id; UDP
    /// requests are retransmitted (RFC 8489 §6.2.1, shortened) since datagrams may drop.
    func exchange(_ request: [UInt8]) throws -> STUNMessage {
        let transactionID = Array(request[8..<20])
        let attempts = transport == .udp ? 3 : 1
        for _ in 0..<attempts {
            try sendAll(request)
            while true {
                guard let bytes = try receiveMessage() else { break } // timed out: retransmit
                let message = try STUNMessage.parse(bytes)
                if message.transactionID == transactionID { return message }
            }
        }
        throw TURNTestError("no STUN response over \(transport) after \(attempts) attempt(s)")
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard result > 0 else { throw TURNTestError("send failed: errno \(errno)") }
            sent += result
        }
    }

    /// One whole message, or nil on timeout.
    private func receiveMessage() throws -> [UInt8]? {
        switch transport {
        case .udp:
            var buffer = [UInt8](repeating: 0, count: 2048)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                throw TURNTestError("recv failed: errno \(errno)")
            }
            return Array(buffer.prefix(count))
        case .tcp:
            guard let header = try receiveExactly(20) else { return nil }
            let length = Int(header[2]) << 8 | Int(header[3])
            guard let body = try receiveExactly(length) else { throw TURNTestError("TCP STUN message cut short") }
            return header + body
        }
    }

    private func receiveExactly(_ count: Int) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count < count {
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if received == 0 { throw TURNTestError("the TURN server closed the TCP connection") }
            if received < 0 {
                if (errno == EAGAIN || errno == EWOULDBLOCK) && bytes.isEmpty { return nil }
                throw TURNTestError("recv failed: errno \(errno)")
            }
            bytes += buffer.prefix(received)
        }
        return bytes
    }

    static func transactionID() -> [UInt8] { Crypto.randomBytes(12) }

    /// A STUN Binding request: true when the server answered with a success.
    func bind() throws -> Bool {
        try exchange(STUNMessage.request(.binding, transactionID: Self.transactionID(), attributes: [])).messageClass == .success
    }
}

/// What an Allocate attempt ended with.
enum AllocateOutcome: Equatable {
    /// The relayed transport address the server opened.
    case allocated(relayed: String)
    /// The error code of the final answer (401 for a refused credential).
    case refused(code: Int)
}

extension STUNConnection {
    /// A TURN Allocate (UDP relay) with the long-term credential mechanism: the first
    /// request carries no credentials and earns a 401 with REALM and NONCE; the
    /// second carries USERNAME, REALM, NONCE and MESSAGE-INTEGRITY keyed with
    /// MD5(username ":" realm ":" password).
    func allocate(username: String, password: String) throws -> AllocateOutcome {
        let udpTransport: [UInt8] = [17, 0, 0, 0] // REQUESTED-TRANSPORT: UDP
        let challenge = try exchange(STUNMessage.request(.allocate, transactionID: Self.transactionID(),
                                                         attributes: [(.requestedTransport, udpTransport)]))
        guard challenge.messageClass == .error, challenge.errorCode == 401,
              let realm = challenge.attribute(.realm), let nonce = challenge.attribute(.nonce) else {
            throw TURNTestError("expected a 401 challenge with REALM and NONCE, got class \(challenge.messageClass) code \(challenge.errorCode ?? 0)")
        }
        let key = md5(Array(username.utf8) + Array(":".utf8) + realm + Array(":".utf8) + Array(password.utf8))
        let response = try exchange(STUNMessage.request(
            .allocate, transactionID: Self.transactionID(),
            attributes: [(.requestedTransport, udpTransport), (.username, Array(username.utf8)),
                         (.realm, realm), (.nonce, nonce)],
            integrityKey: key))
        switch response.messageClass {
        case .success:
            guard let relayed = response.xorAddress(.xorRelayedAddress) else {
                throw TURNTestError("Allocate success without XOR-RELAYED-ADDRESS")
            }
            return .allocated(relayed: relayed)
        case .error:
            return .refused(code: response.errorCode ?? 0)
        case .request, .indication:
            throw TURNTestError("unexpected STUN class in an Allocate response")
        }
    }
}

/// An allocation kept open for further authenticated requests on the same connection.
struct TURNAllocation {
    let realm: [UInt8]
    let nonce: [UInt8]
    let username: String
    let key: [UInt8]
}

extension STUNConnection {
    /// Allocate (UDP or TCP relay) and keep the credentials for CreatePermission; nil and the
    /// error code when refused.
    func openAllocation(username: String, password: String, transport protocolNumber: UInt8 = 17) throws -> (TURNAllocation?, Int?) {
        let requested: [UInt8] = [protocolNumber, 0, 0, 0]
        let challenge = try exchange(STUNMessage.request(.allocate, transactionID: Self.transactionID(),
                                                         attributes: [(.requestedTransport, requested)]))
        guard challenge.messageClass == .error, challenge.errorCode == 401,
              let realm = challenge.attribute(.realm), let nonce = challenge.attribute(.nonce) else {
            throw TURNTestError("expected a 401 challenge, got code \(challenge.errorCode ?? 0)")
        }
        let key = md5(Array(username.utf8) + Array(":".utf8) + realm + Array(":".utf8) + Array(password.utf8))
        let response = try exchange(STUNMessage.request(
            .allocate, transactionID: Self.transactionID(),
            attributes: [(.requestedTransport, requested), (.username, Array(username.utf8)), (.realm, realm), (.nonce, nonce)],
            integrityKey: key))
        guard response.messageClass == .success else { return (nil, response.errorCode ?? 0) }
        return (TURNAllocation(realm: realm, nonce: nonce, username: username, key: key), nil)
    }

    /// CreatePermission for an IPv4 peer: nil on success, else the error code (403 for a
    /// peer the server's policy denies). No packet is sent to the peer.
    func createPermission(_ allocation: TURNAllocation, peer: String) throws -> Int? {
        let octets = peer.split(separator: ".").compactMap { UInt8($0) }
        guard octets.count == 4 else { throw TURNTestError("not an IPv4 address: \(peer)") }
        let cookie = withUnsafeBytes(of: STUNMessage.magicCookie.bigEndian, Array.init)
        let port: UInt16 = 9 ^ UInt16(STUNMessage.magicCookie >> 16)
        let value: [UInt8] = [0x00, 0x01, UInt8(port >> 8), UInt8(port & 0xFF)] + (0..<4).map { octets[$0] ^ cookie[$0] }
        let response = try exchange(STUNMessage.request(
            .createPermission, transactionID: Self.transactionID(),
            attributes: [(.xorPeerAddress, value), (.username, Array(allocation.username.utf8)),
                         (.realm, allocation.realm), (.nonce, allocation.nonce)],
            integrityKey: allocation.key))
        return response.messageClass == .success ? nil : (response.errorCode ?? 0)
    }
}
