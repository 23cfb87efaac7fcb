/// A start failure worth one readable line on the terminal.
public struct ServerStartError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
