import Foundation
import PortariaServer

/// What `portaria serve --demo` tells a person before its JSON logs: where to click, who to
/// log in as, and what is not set up for production (the startup warnings, folded here).
/// The users are the demo data's (DESIGN.md §5, `DemoData`).
enum DemoBanner {
    static let users: [(username: String, who: String, phone: String)] = [
        ("maria", "Maria Souza, A-101 (also Condomínio Azul, 101)", "+5511999990001"),
        ("joao", "João Souza, A-101", "+5511999990002"),
        ("ana", "Ana Lima, B-201", "+5511999990003"),
        ("portaria", "the gate's operator", "+5511999990004"),
        ("admin", "Residencial Demo's administrator", "+5511999990005"),
        ("carlos", "Carlos Reis, Condomínio Azul 101", "+5521999990006"),
    ]

    /// `http://host:port` as a browser on this machine reaches it (an unspecified listen
    /// address is reached on loopback).
    static func base(host: String, port: UInt16) -> String {
        let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        return "http://\(reachable.contains(":") ? "[\(reachable)]" : reachable):\(port)"
    }

    static func text(host: String, port: UInt16, requestLogLevel: Log.Level, smsLogged: Bool, warnings: [String]) -> String {
        let base = base(host: host, port: port)
        var lines = [
            "",
            "Portaria demo is running.",
            "",
            "  Gate (visitor or courier):  \(base)/gate/demo-gate",
            "  Resident app:               \(base)/app/",
            "  Admin panel:                \(base)/admin/",
            "",
            "  Demo users, password demo1234 (or log in by phone with an SMS code):",
        ]
        for user in users {
            lines.append("    " + user.username.padding(toLength: 10, withPad: " ", startingAt: 0)
                         + user.phone.padding(toLength: 16, withPad: " ", startingAt: 0) + user.who)
        }
        if smsLogged { lines += ["", "  SMS codes are written to the log below (no --sms-webhook)."] }
        if !warnings.isEmpty {
            lines += ["", "  Development mode — not set up for production:"]
            lines += warnings.map { "    - \($0)" }
        }
        if requestLogLevel == .debug {
            lines += ["", "  One log line per request: PORTARIA_LOG_LEVEL=debug, or --request-log info."]
        }
        lines += ["", "  Stop with Ctrl-C. JSON logs follow.", "", ""]
        return lines.joined(separator: "\n")
    }
}
