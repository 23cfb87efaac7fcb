// swift-tools-version:6.0
import PackageDescription

/// Portaria: one package, the toolchain's modules and Debian's C libraries only.
/// Layers: C libraries → PortariaCore (shared domain + contract) → PortariaWebSocket
/// (wslay framing + event loop, shared by server and Linux client) → PortariaServer /
/// PortariaClient → the `portaria` executable.
let package = Package(
    name: "Portaria",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "portaria", targets: ["portaria"]),
        .library(name: "PortariaCore", targets: ["PortariaCore"]),
        .library(name: "PortariaClient", targets: ["PortariaClient"]),
        .library(name: "PortariaClientApple", targets: ["PortariaClientApple"]),
        .library(name: "PortariaClientAppleShared", targets: ["PortariaClientAppleShared"]),
    ],
    targets: [
        // MARK: C libraries (Debian -dev packages; module map + shim.h each)
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),
        .systemLibrary(name: "CWslay", providers: [.apt(["libwslay-dev"]), .brew(["wslay"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CArgon2", providers: [.apt(["libargon2-dev"]), .brew(["argon2"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev"]), .brew(["libnghttp2"])]),

        // MARK: Swift layers
        .target(name: "PortariaCore"),
        .target(name: "PortariaWebSocket", dependencies: ["PortariaCore", "CWslay", "COpenSSL"]),
        .target(name: "PortariaServer",
                dependencies: ["PortariaCore", "PortariaWebSocket", "CMicroHTTPD",
                               "CSQLite", "CLibPQ", "COpenSSL", "CArgon2", "CCurl", "CNghttp2"]),
        // The wslay transport is Linux-only (Apple platforms use URLSessionWebSocketTask), and
        // wslay/OpenSSL are not system libraries on iOS: depend on it only where it is used.
        .target(name: "PortariaClient",
                dependencies: ["PortariaCore", .target(name: "PortariaWebSocket", condition: .when(platforms: [.linux]))]),
        // The iOS app's adapters to Apple's frameworks. Every file is wrapped in
        // `#if canImport(…)`, so on Linux both targets compile to nothing (scripts/ios-typecheck
        // checks them against stand-ins). PortariaClientAppleShared is what an app extension
        // may link (Keychain, App Group defaults, the Notification Service Extension's worker:
        // no CallKit, no UIApplication.shared, no BGTaskScheduler); PortariaClientApple adds
        // CallKit, PushKit, notifications, background tasks and the URLSession WebSocket.
        .target(name: "PortariaClientAppleShared", dependencies: ["PortariaClient", "PortariaCore"]),
        .target(name: "PortariaClientApple", dependencies: ["PortariaClient", "PortariaCore", "PortariaClientAppleShared"]),
        .executableTarget(name: "portaria", dependencies: ["PortariaServer", "PortariaClient", "PortariaWebSocket"]),
        // `make bench`: load generators that print figures (WebSocket fan-out, ...).
        .executableTarget(name: "portaria-bench", dependencies: ["PortariaCore", "PortariaWebSocket", "PortariaServer"]),

        // MARK: Tests (Swift Testing)
        // What both server and end-to-end tests use: loopback HTTP, polling, WebDriver.
        .target(name: "PortariaTestSupport", dependencies: ["PortariaWebSocket"], path: "Tests/PortariaTestSupport"),
        .testTarget(name: "PortariaCoreTests", dependencies: ["PortariaCore"]),
        // The client core with injected clock and transports (no server needed).
        .testTarget(name: "PortariaClientTests", dependencies: ["PortariaClient", "PortariaCore"]),
        .testTarget(name: "PortariaServerTests", dependencies: ["PortariaServer", "PortariaWebSocket", "PortariaTestSupport"]),
        .testTarget(name: "PortariaEndToEndTests",
                    dependencies: ["PortariaCore", "PortariaClient", "PortariaWebSocket", "PortariaTestSupport"],
                    // Read from #filePath by the matrix test, not bundled.
                    exclude: ["authorization-matrix.json"]),
    ],
    swiftLanguageModes: [.v6]
)
