import AVFoundation
import PortariaClient
import PortariaCore
import SwiftUI
import UIKit

/// fase-5 §5 Detalhe da visita: the photo, where the visitor was (distance and direction),
/// the voice message, the decisions while it is open, and the timeline. Every text and
/// VoiceOver label is `VisitDetailViewModel` / `VisitDetailState`; this view only decodes
/// the image and plays the audio.
struct VisitDetailView: View {
    let app: ResidentAppModel
    @State private var screen: VisitDetailViewModel
    @State private var photo: UIImage?
    @State private var player: AVAudioPlayer?
    @State private var voiceProblem: String?

    init(app: ResidentAppModel, visitID: String) {
        self.app = app
        _screen = State(initialValue: app.visitDetail(visitID))
    }

    var body: some View {
        List {
            if let state = screen.state {
                Section {
                    if let photo {
                        Image(uiImage: photo).resizable().scaledToFit()
                            .accessibilityLabel(state.photoAccessibilityLabel)
                    } else if state.photoURL == nil {
                        Text(state.photoAccessibilityLabel).foregroundStyle(.secondary)
                    }
                    Text(state.title).font(.title2.bold())
                    Text(state.subtitle)
                    Text(state.statusText).font(.headline)
                    Label(state.locationText, systemImage: "location")
                        .accessibilityLabel(state.locationAccessibilityLabel)
                }
                if state.voiceMessageURL != nil {
                    Section(ClientText.voiceMessageTitle) {
                        Button(player?.isPlaying == true ? ClientText.stopVoiceMessage : ClientText.playVoiceMessage) {
                            Task { await toggleVoice(state) }
                        }
                        if let duration = state.voiceMessageDurationText { Text(duration).foregroundStyle(.secondary) }
                        if let voiceProblem { Text(voiceProblem).foregroundStyle(.orange) }
                    }
                }
                if !state.actions.isEmpty {
                    Section(ClientText.decideTitle) {
                        ForEach(state.actions, id: \.action) { action in
                            Button(action.title) { Task { await app.resolve(screen, action.action) } }
                                .tint(DecisionTint.color(for: action.action))
                                .accessibilityLabel(action.accessibilityLabel)
                        }
                    }
                }
                if let outcome = screen.lastOutcome {
                    Section { Text(outcome) }
                }
                Section(ClientText.timelineTitle) {
                    ForEach(state.timeline) { entry in Text(entry.text) }
                }
            } else if let error = screen.error {
                Text(error)
            } else {
                ProgressView(ClientText.loading)
            }
        }
        .navigationTitle(ClientText.visitTitle)
        .task {
            await screen.load()
            if let url = screen.state?.photoURL, let data = await app.media(url) { photo = UIImage(data: data) }
        }
        .refreshable { await screen.load() }
        .onDisappear { stopVoice() }
    }

    private func stopVoice() {
        guard let player else { return }
        player.stop()
        self.player = nil
        VoiceMessageAudio.end(duringCall: app.callVisitID != nil)
    }

    private func toggleVoice(_ state: VisitDetailState) async {
        if let player, player.isPlaying {
            stopVoice()
            return
        }
        guard let url = state.voiceMessageURL, let data = await app.media(url) else {
            voiceProblem = ClientText.loadError
            return
        }
        VoiceMessageAudio.begin(duringCall: app.callVisitID != nil)
        player = try? AVAudioPlayer(data: data)
        // The gate uploads MP4/AAC or WAV/PCM, both of which AVAudioPlayer reads (decision
        // 0077); anything else it cannot read gets a sentence instead of a dead button.
        voiceProblem = player == nil ? ClientText.voiceMessageUnplayable : nil
        if player == nil { VoiceMessageAudio.end(duringCall: app.callVisitID != nil) }
        player?.play()
    }
}

/// The audio session around a voice message. Outside a call: `.playback` (heard with the
/// ringer switch on silent) while it plays, then the previous category back and the
/// session released so other apps' audio resumes. During a call CallKit owns the session
/// (play and record, configured for the call): it is left alone and the message plays
/// through it.
@MainActor
enum VoiceMessageAudio {
    private static var previous: AVAudioSession.Category?

    static func begin(duringCall: Bool) {
        guard !duringCall, previous == nil else { return }
        let session = AVAudioSession.sharedInstance()
        previous = session.category
        try? session.setCategory(.playback)
        try? session.setActive(true)
    }

    static func end(duringCall: Bool) {
        guard let category = previous else { return }
        previous = nil
        // A call that started meanwhile has configured the session for itself.
        guard !duringCall else { return }
        let session = AVAudioSession.sharedInstance()
        try? session.setActive(false, options: .notifyOthersOnDeactivation)
        try? session.setCategory(category)
    }
}
