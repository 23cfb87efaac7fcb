/// One unfragmented text message as a server writes it on the wire (RFC 6455 §5.2): FIN
/// and the opcode, the payload length in its shortest form, no mask (servers never mask),
/// then the payload. Built once and written as-is to every idle socket of a broadcast,
/// instead of wslay framing the same message once per socket.
public struct ServerFrame: Sendable {
    /// Header and payload.
    public let bytes: [UInt8]
    /// The message alone, for the sockets that frame it through wslay (busy ones).
    public let payload: [UInt8]
    public let opcode: UInt8

    public init(text utf8: [UInt8]) {
        self.init(opcode: 0x1, payload: utf8)
    }

    init(opcode: UInt8, payload: [UInt8]) {
        self.opcode = opcode
        self.payload = payload
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + 10)
        bytes.append(0x80 | opcode)
        switch payload.count {
        case ..<126:
            bytes.append(UInt8(payload.count))
        case ..<65_536:
            bytes.append(126)
            bytes.append(UInt8(payload.count >> 8))
            bytes.append(UInt8(payload.count & 0xff))
        default:
            bytes.append(127)
            let length = UInt64(payload.count)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((length >> UInt64(shift)) & 0xff)) }
        }
        bytes.append(contentsOf: payload)
        self.bytes = bytes
    }
}
