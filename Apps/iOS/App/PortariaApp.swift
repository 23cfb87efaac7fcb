import PortariaClient
import PortariaClientApple
import SwiftUI
import UIKit

@main
struct PortariaApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var delegate
    @Environment(\.scenePhase) private var phase

    var body: some Scene {
        WindowGroup {
            RootView(app: delegate.model.app, calls: delegate.model.calls, video: delegate.model.video)
        }
        .onChange(of: phase) { _, phase in
            let model = delegate.model
            // §8: back from the background, reconcile over REST before trusting the socket
            // (`ResidentAppModel.foreground`), and send what is still queued.
            if phase == .active { Task { await model.app.foreground() } }
            if phase == .background {
                let ringing = model.calls.coordinator.needsRealtime
                Task { await model.app.background(callNeedsRealtime: ringing) }
            }
        }
    }
}

/// UIApplicationDelegate is main-actor isolated: every method here runs on the main actor.
final class AppDelegate: NSObject, UIApplicationDelegate {
    lazy var model = AppModel()

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        // Before returning: a VoIP push or a notification tap may be what launched us, and
        // BGTaskScheduler requires its handlers registered before launch ends.
        model.notifications.install()
        model.notifications.registerBackgroundSync()
        model.calls.startVoIPRegistration()
        application.registerForRemoteNotifications()
        let app = model.app
        Task { await app.launch() }
        return true
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let token = deviceToken.map { String(format: "%02x", $0) }.joined()
        let app = model.app
        Task { await app.pushTokenChanged(token) }
    }

    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        model.app.banner = ClientText.notificationsRegistrationFailed
    }

    /// Background pushes (`visit.ring_cancelled`).
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async -> UIBackgroundFetchResult {
        let json = (try? JSONSerialization.data(withJSONObject: userInfo)) ?? Data()
        model.backgroundPush(json)
        return .newData
    }
}

struct RootView: View {
    let app: ResidentAppModel
    let calls: CallService
    let video: VideoViews

    var body: some View {
        @Bindable var app = app
        Group {
            switch app.route {
            case .login: LoginView(app: app)
            case .home: HomeView(app: app)
            }
        }
        .fullScreenCover(item: $app.callVisitID.visitRoute) { visit in
            if let screen = calls.screen(for: visit.id) {
                CallView(screen: screen, video: video)
            }
        }
        .overlay(alignment: .top) {
            if let banner = app.banner ?? calls.message {
                Text(banner)
                    .font(.callout)
                    .padding()
                    .frame(maxWidth: .infinity)
                    .background(.thinMaterial)
                    .onTapGesture {
                        app.banner = nil
                        calls.message = nil
                    }
            }
        }
    }
}

/// A visit id as a sheet or navigation item.
struct VisitRoute: Identifiable, Hashable {
    let id: String
}

extension Binding where Value == String? {
    /// `ResidentAppModel.callVisitID` / `openedVisitID` as the item SwiftUI presents.
    var visitRoute: Binding<VisitRoute?> {
        Binding<VisitRoute?>(get: { wrappedValue.map(VisitRoute.init(id:)) }, set: { wrappedValue = $0?.id })
    }
}
