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
            RootView()
                .environmentObject(delegate.model)
                .environmentObject(delegate.model.calls)
        }
        .onChange(of: phase) { _, phase in
            // §8: back from the background, reconcile over REST before trusting the socket
            // (RealtimeClient.foreground does REST first), and send what is still queued.
            if phase == .active { delegate.model.foreground() }
            if phase == .background { delegate.model.background() }
        }
    }
}

final class AppDelegate: NSObject, UIApplicationDelegate {
    @MainActor lazy var model = AppModel()

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        MainActor.assumeIsolated {
            // Before returning: a VoIP push or a notification tap may be what launched us.
            model.notifications.install()
            model.notifications.registerBackgroundSync()
            model.calls.startVoIPRegistration()
            application.registerForRemoteNotifications()
        }
        return true
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let token = deviceToken.map { String(format: "%02x", $0) }.joined()
        MainActor.assumeIsolated { model.pushTokenChanged(token) }
    }

    func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        MainActor.assumeIsolated { model.banner = "Não foi possível ativar as notificações: \(error.localizedDescription)" }
    }

    /// Background pushes (`visit.ring_cancelled`): remove the alert of a ring that ended
    /// (its identifier is the server's collapse id, the visit id) and let CallKit know.
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async -> UIBackgroundFetchResult {
        let json = (try? JSONSerialization.data(withJSONObject: userInfo)) ?? Data()
        await MainActor.run { model.backgroundPush(json) }
        return .newData
    }
}

struct RootView: View {
    @EnvironmentObject private var model: AppModel
    @EnvironmentObject private var calls: CallService

    var body: some View {
        Group {
            switch model.route {
            case .login: LoginView()
            case .home: HomeView()
            }
        }
        .fullScreenCover(item: $model.callVisitID) { visitID in
            CallView(visitID: visitID.value)
        }
        .onReceive(calls.$coordinator) { coordinator in
            // Answered from CallKit's screen (maybe on the lock screen): show ours, with
            // the video, the badge and the decisions, once the app is in front.
            if model.callVisitID == nil,
               let call = coordinator.calls.values.first(where: { [.answering, .connecting, .inCall].contains($0.phase) }) {
                model.callVisitID = VisitID(value: call.visitID)
            }
        }
        .overlay(alignment: .top) {
            if let banner = model.banner ?? calls.message {
                Text(banner)
                    .font(.callout)
                    .padding()
                    .frame(maxWidth: .infinity)
                    .background(.thinMaterial)
                    .accessibilityAddTraits(.isStaticText)
                    .onTapGesture { model.banner = nil }
            }
        }
    }
}

/// A visit id as a sheet item.
struct VisitID: Identifiable, Hashable {
    let value: String
    var id: String { value }
}
