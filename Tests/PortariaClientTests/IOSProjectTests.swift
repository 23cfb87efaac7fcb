import Foundation
import PortariaClient
import PortariaCore
import Testing

/// What can be checked of the iOS project without Xcode: the Info.plists and entitlements
/// (written from `Apps/iOS/project.yml`) carry what the spec and Apple require, and agree
/// with the names the server and the core use.
@Suite("iOS project: Info.plist, entitlements, names shared with the server")
struct IOSProjectTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Apps/iOS")
    }()

    static func plist(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent(path))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    @Test("the app rings from the background: voip, audio and remote-notification modes; pt-BR usage strings")
    func appInfo() throws {
        let info = try Self.plist("App/Info.plist")
        let modes = Set(try #require(info["UIBackgroundModes"] as? [String]))
        #expect(modes.isSuperset(of: ["voip", "audio", "remote-notification", "fetch"]))
        for key in ["NSCameraUsageDescription", "NSMicrophoneUsageDescription", "NSFaceIDUsageDescription"] {
            let text = try #require(info[key] as? String, "\(key) missing")
            #expect(text.contains("Portaria") && text.count > 30, "\(key): \(text)")
        }
        #expect(info["CFBundleDevelopmentRegion"] as? String == "pt-BR")
        #expect(info["BGTaskSchedulerPermittedIdentifiers"] as? [String] == ["br.com.portaria.sync"])
        // The shared Keychain group and App Group reach the code through Info.plist.
        #expect(info["PortariaKeychainGroup"] as? String == "$(KEYCHAIN_GROUP)")
        #expect(info["PortariaAppGroup"] as? String == "$(APP_GROUP)")
    }

    @Test("entitlements: APNs environment per configuration, time-sensitive, Keychain group shared with the extension")
    func entitlements() throws {
        let app = try Self.plist("App/Portaria.entitlements")
        let extensionEntitlements = try Self.plist("NotificationService/NotificationService.entitlements")
        #expect(app["aps-environment"] as? String == "$(APS_ENVIRONMENT)")
        #expect(app["com.apple.developer.usernotifications.time-sensitive"] as? Bool == true)
        #expect(app["keychain-access-groups"] as? [String] == extensionEntitlements["keychain-access-groups"] as? [String])
        #expect(app["com.apple.security.application-groups"] as? [String] == extensionEntitlements["com.apple.security.application-groups"] as? [String])
        let yml = try String(contentsOf: Self.root.appendingPathComponent("project.yml"), encoding: .utf8)
        #expect(yml.contains("APS_ENVIRONMENT: development") && yml.contains("APS_ENVIRONMENT: production"))
    }

    @Test("privacy manifests: app and extension declare UserDefaults for the App Group (1C8F.1), no tracking, and ship as resources")
    func privacyManifests() throws {
        let yml = try String(contentsOf: Self.root.appendingPathComponent("project.yml"), encoding: .utf8)
        for target in ["App", "NotificationService"] {
            let manifest = try Self.plist("\(target)/PrivacyInfo.xcprivacy")
            #expect(manifest["NSPrivacyTracking"] as? Bool == false, "\(target)")
            let apis = try #require(manifest["NSPrivacyAccessedAPITypes"] as? [[String: Any]], "\(target)")
            let defaults = apis.first { $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategoryUserDefaults" }
            #expect(defaults?["NSPrivacyAccessedAPITypeReasons"] as? [String] == ["1C8F.1"], "\(target)")
            #expect(yml.contains("      - path: \(target)/PrivacyInfo.xcprivacy\n        buildPhase: resources"), "\(target)")
        }
    }

    @Test("CallKit's icon template ships with the app (40 pt at @2x and @3x) and the provider configuration uses it")
    func callKitIcon() throws {
        for (scale, side) in [("2x", 80), ("3x", 120)] {
            let png = try Data(contentsOf: Self.root.appendingPathComponent("App/CallKitIcon@\(scale).png"))
            #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]), "@\(scale) is a PNG")
            let width = png[16..<20].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == side, "@\(scale)")
        }
        let service = try String(contentsOf: Self.root.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/PortariaClientApple/CallService.swift"), encoding: .utf8)
        #expect(service.contains(#"iconTemplateImageData = UIImage(named: "CallKitIcon")"#))
    }

    @Test("the extension links only extension-safe adapters; both targets name every package product they import")
    func extensionLinksNoCallKit() throws {
        let yml = try String(contentsOf: Self.root.appendingPathComponent("project.yml"), encoding: .utf8)
        let service = try #require(yml.range(of: "  PortariaNotificationService:")).lowerBound
        let app = String(yml[..<service]), ext = String(yml[service...])
        for product in ["PortariaCore", "PortariaClient", "PortariaClientAppleShared", "PortariaClientApple"] {
            #expect(app.contains("product: \(product)\n"), "app: \(product)")
        }
        #expect(!ext.contains("product: PortariaClientApple\n"), "the extension must not link CallKit/UIApplication adapters")
        #expect(ext.contains("product: PortariaClientAppleShared\n") && ext.contains("product: PortariaCore\n"))
        #expect(ext.contains("APPLICATION_EXTENSION_API_ONLY: YES"))
    }

    @Test("the extension is a Notification Service Extension; the bundle id is the server's APNs topic")
    func serviceExtension() throws {
        let info = try Self.plist("NotificationService/Info.plist")
        let ext = try #require(info["NSExtension"] as? [String: Any])
        #expect(ext["NSExtensionPointIdentifier"] as? String == "com.apple.usernotifications.service")
        #expect(ext["NSExtensionPrincipalClass"] as? String == "$(PRODUCT_MODULE_NAME).NotificationService")
        let yml = try String(contentsOf: Self.root.appendingPathComponent("project.yml"), encoding: .utf8)
        // `--apns-topic br.com.portaria.app` (VoIP pushes go to br.com.portaria.app.voip).
        #expect(yml.contains("PRODUCT_BUNDLE_IDENTIFIER: br.com.portaria.app\n"))
        #expect(yml.contains("PRODUCT_BUNDLE_IDENTIFIER: br.com.portaria.app.NotificationService"))
    }

    @Test("the screens write no words of their own: every title, button and VoiceOver label comes from ClientText or a view model")
    func noLiteralWordsInScreens() throws {
        // A literal string as the first argument of a SwiftUI text-taking API is a word the
        // core's table does not have (and a screen reader label nobody tested).
        let apis = ["Text", "Button", "Label", "Section", "Toggle", "TextField", "SecureField", "Picker", "ProgressView",
                    "navigationTitle", "accessibilityLabel", "accessibilityHint"]
        let app = Self.root.appendingPathComponent("App")
        let files = try #require(FileManager.default.enumerator(at: app, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count >= 7, "\(files.map(\.lastPathComponent))")
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() {
                for api in apis where line.contains("\(api)(\"") {
                    Issue.record("\(file.lastPathComponent):\(number + 1): literal text in \(api)(…): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
    }

    @Test("WebRTC: one binary package pinned to an exact version, used by the app target's adapter, audio left to CallKit")
    func webRTCPackage() throws {
        let yml = try String(contentsOf: Self.root.appendingPathComponent("project.yml"), encoding: .utf8)
        #expect(yml.contains("url: https://github.com/stasel/WebRTC.git"))
        #expect(yml.range(of: #"\n    exactVersion: [0-9]+\.[0-9]+\.[0-9]+\n"#, options: .regularExpression) != nil,
                "a binary dependency is pinned exactly")
        #expect(yml.contains("      - package: WebRTC\n"), "the app target links it")
        let adapter = try String(contentsOf: Self.root.appendingPathComponent("App/WebRTCMediaEngine.swift"), encoding: .utf8)
        #expect(adapter.contains("final class WebRTCMediaEngine: CallMediaEngine"))
        #expect(adapter.contains("final class WebRTCPeerConnection: PeerConnection"))
        // CallKit activates the audio session; WebRTC's audio unit waits for it.
        #expect(adapter.contains("useManualAudio = true") && adapter.contains("isAudioEnabled = active"))
    }

    @Test("the categories the app registers are the ones the server names")
    func categoriesMatchTheServer() {
        #expect(Set(NotificationCategories.all.map(\.identifier)) == [NotificationCategoryID.delivery, NotificationCategoryID.visit])
        #expect(NotificationCategoryID.delivery == "DELIVERY" && NotificationCategoryID.visit == "VISIT")
    }
}
