// Stand-in for `Darwin`: empty. It exists so that `#if canImport(Darwin)` is true in the
// type-check (scripts/ios-typecheck) and the Apple-only files are really checked. What
// those files use from Foundation on Apple platforms (URLSession's WebSocket task) comes
// from swift-corelibs-foundation's FoundationNetworking, imported implicitly by the script.
