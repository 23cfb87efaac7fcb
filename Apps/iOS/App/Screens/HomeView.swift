import PortariaClient
import PortariaCore
import SwiftUI

/// fase-5 §5 Home: pendências on top, history below, the connection state visible. Rows,
/// texts and VoiceOver labels are `HomeState` / `VisitRow` (PortariaClient).
struct HomeView: View {
    @EnvironmentObject private var model: AppModel

    var body: some View {
        NavigationStack {
            List {
                Section {
                    Label(model.home.connectionText, systemImage: model.home.connection == .live ? "dot.radiowaves.left.and.right" : "wifi.exclamationmark")
                        .foregroundStyle(model.home.connection == .live ? .green : .orange)
                        .accessibilityLabel("Conexão: \(model.home.connectionText)")
                }
                if !model.home.queued.isEmpty {
                    Section("Aguardando envio") {
                        ForEach(model.home.queued, id: \.self) { Text($0) }
                    }
                }
                rows("Tocando agora", model.home.ringing)
                rows("Pendências", model.home.pending)
                rows("Histórico", model.home.history)
            }
            .navigationTitle("Portaria")
            .navigationDestination(for: VisitID.self) { VisitDetailView(visitID: $0.value) }
            .navigationDestination(item: $model.openedVisit) { VisitDetailView(visitID: $0.value) }
            .toolbar {
                NavigationLink { SettingsView() } label: { Image(systemName: "gearshape") }
                    .accessibilityLabel("Configurações")
            }
            .refreshable { model.foreground() }
        }
    }

    @ViewBuilder private func rows(_ title: String, _ rows: [VisitRow]) -> some View {
        if !rows.isEmpty {
            Section(title) {
                ForEach(rows) { row in
                    NavigationLink(value: VisitID(value: row.id)) {
                        VStack(alignment: .leading, spacing: 4) {
                            Text(row.title).font(.headline)
                            Text(row.subtitle).font(.subheadline).foregroundStyle(.secondary)
                            Text(row.statusText).font(.subheadline)
                            if row.hasVoiceMessage { Label("Recado de voz", systemImage: "waveform").font(.footnote) }
                        }
                    }
                    // One label for the whole row, written by the core.
                    .accessibilityElement(children: .ignore)
                    .accessibilityLabel(row.accessibilityLabel)
                }
            }
        }
    }
}
