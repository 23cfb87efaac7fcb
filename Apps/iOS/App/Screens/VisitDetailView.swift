import AVFoundation
import PortariaClient
import PortariaCore
import SwiftUI
import UIKit

/// fase-5 §5 Detalhe da visita: photo, timeline of `visit_attempts`, the voice message
/// player, and the decision buttons while it is open. Built on the `Visit` DTO; a tested
/// view model for this screen is the client core's work (docs/ios.md, gaps).
struct VisitDetailView: View {
    let visitID: String
    @EnvironmentObject private var model: AppModel
    @State private var visit: Visit?
    @State private var photo: UIImage?
    @State private var player: AVAudioPlayer?
    @State private var failed = false

    var body: some View {
        List {
            if let visit {
                Section {
                    if let photo {
                        Image(uiImage: photo).resizable().scaledToFit()
                            .accessibilityLabel("Foto de \(visit.visitorName) tirada na portaria")
                    }
                    Text([visit.carrier, visit.visitorName].compactMap { $0 }.joined(separator: " — ")).font(.title2.bold())
                    Text("\(visit.unit.label) · \(visit.kind == .delivery ? "Entrega" : "Visita")")
                    Text(visit.geofenceBadge).font(.headline)
                    Text(HomeText.status(visit.status, resolution: visit.resolution, at: visit.updatedAt, timeZone: model.home.timeZone))
                }
                if visit.voiceMessage != nil {
                    Section("Recado") {
                        Button(player?.isPlaying == true ? "Parar recado" : "Ouvir recado") { Task { await toggleVoice() } }
                    }
                }
                if !visit.status.isTerminal {
                    Section("Decidir") {
                        let actions: [ResolutionAction] = visit.kind == .delivery ? [.authorize, .leaveAtConcierge, .deny] : [.authorize, .deny]
                        ForEach(actions, id: \.self) { action in
                            Button(ClientText.actionTitle(action)) { model.resolve(visit.id, action) }
                                .tint(action == .authorize ? .green : (action == .deny ? .red : .accentColor))
                        }
                    }
                }
                Section("Linha do tempo") {
                    ForEach(visit.attempts, id: \.id) { attempt in
                        VStack(alignment: .leading) {
                            Text(Self.describe(attempt)).font(.body)
                            Text(ResolutionText.clock(attempt.at, timeZone: model.home.timeZone)).font(.footnote).foregroundStyle(.secondary)
                        }
                        .accessibilityElement(children: .combine)
                    }
                }
            } else if failed {
                Text("Não foi possível carregar esta visita. Puxe para tentar de novo.")
            } else {
                ProgressView("Carregando…")
            }
        }
        .navigationTitle("Visita")
        .task { await load() }
        .refreshable { await load() }
    }

    private func load() async {
        do {
            let loaded: Visit = try await model.session.send("GET", "/v1/visits/\(visitID)")
            visit = loaded
            failed = false
            if loaded.photo != nil, let data = await media("photo") { photo = UIImage(data: data) }
        } catch {
            failed = true
        }
    }

    private func media(_ kind: String) async -> Data? {
        let response = try? await model.session.sendAuthorized(ClientHTTPRequest(method: "GET", path: "/v1/visits/\(visitID)/\(kind)"))
        guard let response, response.isSuccess else { return nil }
        return response.body
    }

    private func toggleVoice() async {
        if let player, player.isPlaying { player.stop(); return }
        guard let data = await media("voice_message") else { return }
        try? AVAudioSession.sharedInstance().setCategory(.playback)
        player = try? AVAudioPlayer(data: data)
        player?.play()
    }

    /// pt-BR line for one timeline entry.
    static func describe(_ attempt: VisitAttempt) -> String {
        let who = attempt.user.map { ResolutionText.firstName($0.name) } ?? ""
        switch attempt.kind {
        case .ring: return "Tocou para \(who)"
        case .pushSent: return "Notificação enviada para \(who)"
        case .pushReceipt: return "Notificação recebida por \(who)"
        case .answer: return "\(who) atendeu"
        case .decline: return "\(who) recusou a chamada"
        case .timeout: return "Ninguém atendeu"
        case .resolution: return who.isEmpty ? "Resolvida automaticamente" : "\(who) decidiu"
        case .cancel: return "O visitante desistiu"
        case .expire: return "Expirou sem resposta"
        case .callStarted: return "Chamada de vídeo iniciada"
        case .callConnected: return "Vídeo conectado"
        case .callEnded: return "Chamada encerrada"
        }
    }
}
