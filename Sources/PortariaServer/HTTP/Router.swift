/// A handler for one route. Handlers are async: the HTTP layer suspends the
/// libmicrohttpd connection while they await and resumes it with their answer.
public typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Maps `METHOD /path/{param}` to handlers. Static segments win over parameters;
/// a path that exists under another method answers 405 with `Allow`.
public struct Router: Sendable {
    private final class Node: @unchecked Sendable {
        // Unchecked: mutated only while routes are registered, before the server starts.
        var children: [String: Node] = [:]
        var parameter: (name: String, node: Node)?
        var handlers: [String: (pattern: String, handler: HTTPHandler)] = [:]
    }

    /// The outcome of matching a request against the routes.
    public enum Match: Sendable {
        case found(route: String, parameters: [String: String], handler: HTTPHandler)
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    // Routes are added while the server is assembled, before it serves; after that the
    // tree is only read, which is why the class can be shared.
    private let root = Node()

    public init() {}

    public func add(_ method: String, _ pattern: String, _ handler: @escaping HTTPHandler) {
        var node = root
        for segment in Self.segments(pattern) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") {
                let name = String(segment.dropFirst().dropLast())
                if let existing = node.parameter {
                    precondition(existing.name == name, "conflicting parameter names at \(pattern)")
                    node = existing.node
                } else {
                    let child = Node()
                    node.parameter = (name, child)
                    node = child
                }
            } else {
                if let child = node.children[segment] { node = child }
                else {
                    let child = Node()
                    node.children[segment] = child
                    node = child
                }
            }
        }
        precondition(node.handlers[method] == nil, "duplicate route \(method) \(pattern)")
        node.handlers[method] = (pattern, handler)
    }

    /// Registers a route of the catalogue (`APIRoutes`): its method and template, the
    /// same strings the metrics label a request with.
    public func add<Request, Response>(_ route: APIRoute<Request, Response>, _ handler: @escaping HTTPHandler) {
        add(route.method.rawValue, route.template, handler)
    }

    /// Every registered route as `METHOD template`, sorted (what the catalogue test
    /// compares with `APIRoutes.all`).
    public var registered: [String] {
        var found: [String] = []
        func walk(_ node: Node) {
            for (method, entry) in node.handlers { found.append("\(method) \(entry.pattern)") }
            for child in node.children.values { walk(child) }
            if let (_, child) = node.parameter { walk(child) }
        }
        walk(root)
        return found.sorted()
    }

    public func get(_ pattern: String, _ handler: @escaping HTTPHandler) { add("GET", pattern, handler) }
    public func post(_ pattern: String, _ handler: @escaping HTTPHandler) { add("POST", pattern, handler) }
    public func put(_ pattern: String, _ handler: @escaping HTTPHandler) { add("PUT", pattern, handler) }
    public func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { add("DELETE", pattern, handler) }

    public func match(method: String, path: String) -> Match {
        var parameters: [String: String] = [:]
        guard let node = Self.find(root, Self.segments(path)[...], &parameters) else { return .notFound }
        let lookup = method == "HEAD" ? (node.handlers["HEAD"] ?? node.handlers["GET"]) : node.handlers[method]
        if let (pattern, handler) = lookup {
            return .found(route: pattern, parameters: parameters, handler: handler)
        }
        if node.handlers.isEmpty { return .notFound }
        return .methodNotAllowed(allowed: node.handlers.keys.sorted())
    }

    private static func find(_ node: Node, _ segments: ArraySlice<String>,
                             _ parameters: inout [String: String]) -> Node? {
        guard let segment = segments.first else { return node.handlers.isEmpty ? nil : node }
        let rest = segments.dropFirst()
        if let child = node.children[segment], let found = find(child, rest, &parameters) {
            return found
        }
        if let (name, child) = node.parameter, let decoded = segment.removingPercentEncoding,
           !decoded.isEmpty {
            var attempt = parameters
            attempt[name] = decoded
            if let found = find(child, rest, &attempt) {
                parameters = attempt
                return found
            }
        }
        return nil
    }

    private static func segments(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}

import Foundation
import PortariaCore
