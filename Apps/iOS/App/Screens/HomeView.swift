import PortariaClient
import PortariaCore
import SwiftUI

/// fase-5 §5 Home: ringing and pendências on top, history below, decisions still queued,
/// the connection state visible. Rows, texts, decisions and VoiceOver labels are
/// `HomeViewModel` / `HomeState` / `VisitRow`.
struct HomeView: View {
    let app: ResidentAppModel

    var body: some View {
        @Bindable var app = app
        let home = app.home
        let state = home.state
        NavigationStack {
            List {
                Section {
                    Label(state.connectionText, systemImage: state.connection == .live ? "dot.radiowaves.left.and.right" : "wifi.exclamationmark")
                        .foregroundStyle(state.connection == .live ? .green : .orange)
                        .accessibilityLabel(ClientText.connectionAccessibility(state.connectionText))
                }
                if let outcome = home.lastOutcome {
                    Section { Text(outcome) }
                }
                if !state.queued.isEmpty {
                    Section(ClientText.queuedSection) {
                        ForEach(state.queued, id: \.self) { Text($0) }
                    }
                }
                rows(ClientText.ringingSection, state.ringing, home)
                rows(ClientText.pendingSection, state.pending, home, empty: ClientText.emptyPending)
                rows(ClientText.historySection, state.history, home)
            }
            .navigationTitle(ClientText.appTitle)
            .navigationDestination(for: VisitRoute.self) { VisitDetailView(app: app, visitID: $0.id) }
            .navigationDestination(item: $app.openedVisitID.visitRoute) { VisitDetailView(app: app, visitID: $0.id) }
            .toolbar {
                NavigationLink { SettingsView(app: app) } label: { Image(systemName: "gearshape") }
                    .accessibilityLabel(ClientText.settingsTitle)
            }
            .refreshable { await app.foreground() }
        }
    }

    @ViewBuilder
    private func rows(_ title: String, _ rows: [VisitRow], _ home: HomeViewModel, empty: String? = nil) -> some View {
        if !rows.isEmpty || empty != nil {
            Section(title) {
                if rows.isEmpty, let empty { Text(empty).foregroundStyle(.secondary) }
                ForEach(rows) { row in
                    VStack(alignment: .leading, spacing: 6) {
                        NavigationLink(value: VisitRoute(id: row.id)) {
                            VStack(alignment: .leading, spacing: 4) {
                                Text(row.title).font(.headline)
                                Text(row.subtitle).font(.subheadline).foregroundStyle(.secondary)
                                Text(row.statusText).font(.subheadline)
                                if row.hasVoiceMessage { Label(ClientText.voiceMessageBadge, systemImage: "waveform").font(.footnote) }
                            }
                        }
                        // One label for the whole row, written by the core.
                        .accessibilityElement(children: .ignore)
                        .accessibilityLabel(row.accessibilityLabel)
                        if !row.actions.isEmpty {
                            // Dynamic Type: the buttons wrap instead of clipping at the largest sizes.
                            ViewThatFits {
                                HStack { decisionButtons(row, home) }
                                VStack(alignment: .leading) { decisionButtons(row, home) }
                            }
                        }
                    }
                }
            }
        }
    }

    private func decisionButtons(_ row: VisitRow, _ home: HomeViewModel) -> some View {
        ForEach(row.actions, id: \.action) { action in
            Button(action.title) { Task { await home.resolve(visitID: row.id, action: action.action) } }
                .buttonStyle(.bordered)
                .tint(DecisionTint.color(for: action.action))
                .accessibilityLabel(action.accessibilityLabel)
        }
    }
}

/// A decision button's colour: Autorizar green, Negar red, the rest the accent colour.
/// A function rather than a nested ternary of implicit members, which the type checker
/// resolves slowly against `tint`'s overloads.
enum DecisionTint {
    static func color(for action: ResolutionAction) -> Color {
        switch action {
        case .authorize: return .green
        case .deny: return .red
        default: return .accentColor
        }
    }
}
