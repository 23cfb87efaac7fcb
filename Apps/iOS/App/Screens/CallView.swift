import PortariaClient
import PortariaClientApple
import PortariaCore
import SwiftUI
import UIKit

/// fase-5 §5 Chamada: the visitor's video full screen, self-preview in the corner, name,
/// unit and the geofence badge over it; Autorizar (green, primary), Negar, mudo, encerrar.
/// Everything shown — texts, colours, VoiceOver labels — is `CallScreenState`.
struct CallView: View {
    let visitID: String
    @EnvironmentObject private var calls: CallService
    @Environment(\.dismiss) private var dismiss

    var body: some View {
        if let call = calls.coordinator.calls[visitID] {
            let state = CallScreenState(call, isMuted: calls.isMuted, message: calls.message)
            ZStack {
                Color.black.ignoresSafeArea()
                VideoSurface(kind: .remote).ignoresSafeArea()
                    .accessibilityLabel("Vídeo do visitante")
                VStack(spacing: 12) {
                    HStack(alignment: .top) {
                        VStack(alignment: .leading, spacing: 6) {
                            Text(state.callerName).font(.title.bold())
                            Text(state.unitLine).font(.headline)
                            Text(state.badgeText)
                                .font(.headline)
                                .padding(.horizontal, 10).padding(.vertical, 4)
                                .background(Self.color(state.badgeColor), in: Capsule())
                                .accessibilityLabel(state.badgeAccessibilityLabel)
                        }
                        .foregroundStyle(.white)
                        .accessibilityElement(children: .combine)
                        Spacer()
                        VideoSurface(kind: .local)
                            .frame(width: 96, height: 128)
                            .clipShape(RoundedRectangle(cornerRadius: 12))
                            .accessibilityHidden(true)
                    }
                    if let message = state.message {
                        Text(message).font(.headline).padding().background(.thinMaterial, in: RoundedRectangle(cornerRadius: 12))
                    }
                    Spacer()
                    buttons(state)
                }
                .padding()
            }
            .onChange(of: state.phase.isEnded) { _, ended in if ended { dismiss() } }
        } else {
            Color.black.onAppear { dismiss() }
        }
    }

    private func buttons(_ state: CallScreenState) -> some View {
        let actions = state.actions
        return VStack(spacing: 12) {
            ForEach(Array(zip(state.decisions, actions)), id: \.0) { decision, action in
                Button(action.title) { calls.decide(visitID: visitID, action: decision) }
                    .buttonStyle(.borderedProminent)
                    .tint(action.isPrimary ? .green : (decision == .deny ? .red : .gray))
                    .controlSize(.large)
                    .frame(maxWidth: .infinity)
                    .accessibilityLabel(action.accessibilityLabel)
            }
            HStack(spacing: 24) {
                if let mute = actions.dropLast().last {
                    Button(mute.title) { calls.toggleMute() }.accessibilityLabel(mute.accessibilityLabel)
                }
                if let end = actions.last {
                    Button(end.title, role: .destructive) { calls.userEnded(visitID: visitID) }.accessibilityLabel(end.accessibilityLabel)
                }
            }
            .buttonStyle(.bordered)
            .tint(.white)
        }
    }

    static func color(_ color: CallScreenState.BadgeColor) -> Color {
        switch color {
        case .green: return .green
        case .amber: return .orange
        case .gray: return .gray
        }
    }
}

/// Where the WebRTC engine draws (the remote video full screen, the local preview in the
/// corner). The engine is the app's `VideoCallEngine`; until a WebRTC framework is added
/// to this project it is black (docs/ios.md, "not built").
struct VideoSurface: UIViewRepresentable {
    enum Kind { case remote, local }
    let kind: Kind

    func makeUIView(context: Context) -> UIView {
        let view = VideoViews.shared.view(for: kind)
        view.backgroundColor = .black
        return view
    }

    func updateUIView(_ uiView: UIView, context: Context) {}
}

/// The two views a WebRTC engine renders into (RTCMTLVideoView in a WebRTC build).
@MainActor
final class VideoViews {
    static let shared = VideoViews()
    let remote = UIView()
    let local = UIView()
    func view(for kind: VideoSurface.Kind) -> UIView { kind == .remote ? remote : local }
}
