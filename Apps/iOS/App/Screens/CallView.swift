import PortariaClient
import PortariaClientApple
import PortariaCore
import SwiftUI
import UIKit

/// fase-5 §5 Chamada: the visitor's video full screen, self-preview in the corner, name,
/// unit and the geofence badge over it; the buttons by phase (Atender, Autorizar, Negar,
/// Deixar na portaria, Mudo, Encerrar). Everything shown — texts, colours, VoiceOver labels,
/// which buttons exist — is `CallViewModel` / `CallScreenState`; a tap is
/// `CallViewModel.perform`, which `CallService` routes through CallKit where it must.
struct CallView: View {
    let screen: CallViewModel
    let video: VideoViews

    var body: some View {
        let state = screen.state
        ZStack {
            Color.black.ignoresSafeArea()
            VideoSurface(views: video, kind: .remote).ignoresSafeArea()
                .accessibilityLabel(ClientText.remoteVideoAccessibility)
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
                        Text(state.phaseText).font(.subheadline)
                    }
                    .foregroundStyle(.white)
                    .accessibilityElement(children: .combine)
                    Spacer()
                    VideoSurface(views: video, kind: .local)
                        .frame(width: 96, height: 128)
                        .clipShape(RoundedRectangle(cornerRadius: 12))
                        .accessibilityLabel(ClientText.selfPreviewAccessibility)
                }
                if let message = state.message {
                    Text(message).font(.headline).padding().background(.thinMaterial, in: RoundedRectangle(cornerRadius: 12))
                }
                Spacer()
                ViewThatFits(in: .vertical) {
                    buttons(state)
                    ScrollView { buttons(state) }
                }
            }
            .padding()
        }
    }

    private func buttons(_ state: CallScreenState) -> some View {
        VStack(spacing: 12) {
            ForEach(Array(state.actions.enumerated()), id: \.offset) { _, action in
                Button(action.title) { screen.perform(action.intent) }
                    .buttonStyle(.borderedProminent)
                    .tint(Self.tint(action))
                    .controlSize(.large)
                    .frame(maxWidth: .infinity)
                    .accessibilityLabel(action.accessibilityLabel)
            }
        }
    }

    static func tint(_ action: CallScreenState.Action) -> Color {
        if action.isPrimary { return .green }
        switch action.intent {
        case .decide(.deny), .end: return .red
        default: return .gray
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

/// Where WebRTC draws (`VideoViews`, rendered by `WebRTCMediaEngine`): the visitor full
/// screen, the self-preview in the corner. Black until the first frame.
struct VideoSurface: UIViewRepresentable {
    enum Kind { case remote, local }
    let views: VideoViews
    let kind: Kind

    func makeUIView(context: Context) -> UIView {
        let view: UIView = kind == .remote ? views.remote : views.local
        view.backgroundColor = .black
        return view
    }

    func updateUIView(_ uiView: UIView, context: Context) {}
}
