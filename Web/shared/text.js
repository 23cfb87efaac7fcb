// Every pt-BR sentence the resident app and its service worker show about a decision, in
// one table — the same sentences as the client core (`PortariaClient/Presentation/
// ClientText.swift`). Times are HH:mm in the condominium's time zone (GET /v1/me
// `company.time_zone`), never the browser's. Rule: the resident never reads an HTTP
// status, an error code or an English word.

export const DEFAULT_ZONE = "America/Sao_Paulo";

/** "14:32" for `iso` in `zone`; "" for a missing or invalid date. */
export function clock(iso, zone = DEFAULT_ZONE) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return "";
  try {
    return date.toLocaleTimeString("pt-BR", { hour: "2-digit", minute: "2-digit", hour12: false, timeZone: zone || DEFAULT_ZONE });
  } catch {
    // An unknown zone name from an old server: the condominium default, not the browser's.
    return date.toLocaleTimeString("pt-BR", { hour: "2-digit", minute: "2-digit", hour12: false, timeZone: DEFAULT_ZONE });
  }
}

export function firstName(name) {
  return (name || "").trim().split(/\s+/)[0] || "Alguém";
}

/** A tap on a visit that had just moved under the finger (Web/app/app.js `takesTaps`). */
export const LIST_MOVED = "A lista acabou de mudar. Confira a visita e toque de novo.";

export const ACTION_TITLES = { authorize: "Autorizar", deny: "Negar", leave_at_concierge: "Deixar na portaria" };
const INFINITIVES = { authorize: "autorizar", deny: "negar", leave_at_concierge: "deixar na portaria" };

/** "Visita autorizada ✓", "Entrega: deixar na portaria ✓". */
export function resolved(action, kind) {
  const delivery = kind === "delivery";
  switch (action) {
    case "authorize": return delivery ? "Entrega: autorizada ✓" : "Visita autorizada ✓";
    case "deny": return delivery ? "Entrega: recusada ✓" : "Visita negada ✓";
    default: return delivery ? "Entrega: deixar na portaria ✓" : "Visita: deixar na portaria ✓";
  }
}

/**
 * Someone decided first (409 `VISIT_ALREADY_RESOLVED`, or the visit read afterwards). The
 * server's own sentence (`message`, already in the condominium's zone and aware of `via`:
 * a delivery rule reads as automatic) is used as it is; only the resident's own earlier
 * decision (another tab, another phone) reads "Você já …", as in the client core.
 *
 * @param {{message?: string, via?: string, action?: string, resolved_by?: {id: string, name: string}, resolved_at?: string}} error
 */
export function alreadyResolved(error, myUserID, zone) {
  const time = clock(error.resolved_at, zone);
  const by = error.resolved_by || {};
  if (error.via !== "auto" && myUserID && by.id === myUserID) {
    switch (error.action) {
      case "authorize": return `Você já autorizou às ${time}`;
      case "deny": return `Você já negou às ${time}`;
      default: return `Você já pediu para deixar na portaria às ${time}`;
    }
  }
  if (typeof error.message === "string" && error.message) return error.message;
  if (error.via === "auto") return `Deixado na portaria automaticamente às ${time}`;
  const who = firstName(by.name);
  switch (error.action) {
    case "authorize": return `${who} já autorizou às ${time}`;
    case "deny": return `${who} já negou às ${time}`;
    default: return `${who} pediu para deixar na portaria às ${time}`;
  }
}

/** The same, from a visit that carries its `resolution` ({action, by, at, via}). */
export function alreadyResolvedVisit(resolution, myUserID, zone) {
  return alreadyResolved({ action: resolution.action, resolved_by: resolution.by, resolved_at: resolution.at, via: resolution.via },
    myUserID, zone);
}

/** What a ring notification becomes once someone decided: "Maria autorizou às 14:32". */
export function decidedBy(resolution, myUserID, zone) {
  const time = clock(resolution.at, zone);
  if (resolution.via === "auto") return `Deixado na portaria automaticamente às ${time}`;
  const by = resolution.by || {};
  const who = myUserID && by.id === myUserID ? "Você" : firstName(by.name);
  switch (resolution.action) {
    case "authorize": return `${who} autorizou às ${time}`;
    case "deny": return `${who} negou às ${time}`;
    default: return `${who} pediu para deixar na portaria às ${time}`;
  }
}

/** The visit ended without a decision: "O visitante desistiu às 14:32". */
export function closed(status, kind, at, zone) {
  const time = at ? ` às ${clock(at, zone)}` : "";
  const who = kind === "delivery" ? "O entregador" : "O visitante";
  switch (status) {
    case "cancelled": return `${who} desistiu${time}`;
    case "expired": return `A visita expirou${time} sem resposta`;
    case "resolved": return `Esta visita já foi resolvida${time}`;
    default: return "Esta visita não pode ser decidida agora";
  }
}

export const REFUSED = {
  visit_not_found: "Esta visita não está mais disponível para você",
  forbidden: "Você não tem permissão para decidir esta visita",
  invalid: "Não foi possível registrar a decisão. Tente de novo pelo app",
};

/** The tap is kept and being retried: what the resident reads meanwhile. */
export function queued(action, reason) {
  const decision = `Sua decisão (${INFINITIVES[action] || "responder"})`;
  switch (reason) {
    case "server_busy": return `A portaria está ocupada. ${decision} foi guardada e será enviada em instantes`;
    case "needs_login": return `Sua sessão expirou. Entre novamente para enviar ${decision[0].toLowerCase()}${decision.slice(1)}`;
    case "sending": return "Enviando…";
    // Online, but the request got no answer (the server or the way to it is down). The
    // web's own sentence: a browser knows when it is offline (`navigator.onLine`), so
    // "Sem conexão" is kept for that case (decision 0080).
    case "no_answer": return `A portaria não respondeu. ${decision} foi guardada e será enviada em instantes`;
    default: return `Sem conexão com a portaria. ${decision} foi guardada e será enviada assim que possível`;
  }
}

/** `340m`, `1,2km`, `12km` — the rounding rule of `Geofence.formatDistance` in PortariaCore. */
export function distance(metres) {
  const tens = Math.round(metres / 10) * 10;
  if (tens < 1000) return `${Math.max(tens, 10)}m`;
  const tenths = Math.round(metres / 100) / 10;
  if (tenths < 10) return `${Math.floor(tenths)},${Math.round(tenths * 10) % 10}km`;
  return `${Math.round(metres / 1000)}km`;
}

/** The geofence badge as the server writes it (`Geofence.badge`): "✓ Na entrada", "⚠ A 340m da portaria". */
export function geofenceBadge(status, distanceM) {
  if (status === "at_entrance") return "✓ Na entrada";
  if (status === "away") return `⚠ A ${distance(Number(distanceM) || 0)} da portaria`;
  return "Localização desconhecida";
}
