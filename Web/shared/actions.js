// The durable action queue, shared by the resident app's page and its service worker.
//
// A tap (a button in the page, an action button on a notification) becomes a record in
// IndexedDB with its Idempotency-Key *before* the first send, so a crash, a closed tab or
// a dead network can delay it but never lose it or apply it twice: every attempt carries
// the same key and the server replays. Records are sent one at a time under a Web Lock
// (page and worker never send the same record concurrently), retried with back-off on
// transient failures (no answer, 429, 5xx), and at once — back-off or not — on every sign
// of connectivity (`online`, the realtime socket reconnecting, the page coming back to
// the screen, any request that got an answer) and on Background Sync, until a terminal answer: done, someone else decided first, the visit
// closed, or refused. A 401 refreshes the session (`authorized`); a refused refresh
// leaves the record waiting for the same resident to log in again.

import { backoff, isTransient, newIdempotencyKey } from "./api.js";
import { authorized, loadSession, SESSION_ENDED, withLock } from "./session.js";
import { allActions, deleteAction, putAction } from "./store.js";
import * as text from "./text.js";

export const CHANNEL = "portaria.actions";
/** Terminal records are kept this long (the page shows the outcome), then dropped. */
const KEEP_MS = 24 * 3600 * 1000;

function announce(record) {
  try {
    const channel = new BroadcastChannel(CHANNEL);
    channel.postMessage(record);
    channel.close();
  } catch { /* no BroadcastChannel: the page reads the store on its next refresh */ }
}

/**
 * Stores one tap. `source` is "page" or "notification" (whose outcome is notified).
 * @returns the stored record (state "pending")
 */
export async function enqueue({ visitID, action, kind = "visit", visitorName = "", source = "page" }) {
  const session = await loadSession();
  const record = {
    key: newIdempotencyKey(), visitID, action, kind, visitorName, source,
    userID: session ? session.userID : "", companyID: session ? session.companyID : "",
    createdAt: Date.now(), attempts: 0, nextAt: 0, state: "pending",
    text: text.queued(action, "sending"), ok: false,
  };
  await putAction(record);
  announce(record);
  return record;
}

/**
 * Sends every due pending record of the logged-in resident, one at a time. `notify(record)`
 * is called for each record that reached a terminal answer (the caller shows it). `now`:
 * the network is back, so every record that failed for want of a network is due whatever
 * its back-off (a visitor is standing at the gate); a record the server answered with 429
 * or 5xx keeps its back-off, which spares a server that asked for a pause.
 * @returns {Promise<{finished: object[], nextAt: number}>} `nextAt` = when the soonest
 *   waiting record is due again (0: nothing waiting on a timer).
 */
export async function drain({ notify = () => {}, now: atOnce = false } = {}) {
  return withLock("portaria.actions", async () => {
    const session = await loadSession();
    const now = Date.now();
    const finished = [];
    let nextAt = 0;
    for (let record of await allActions()) {
      if (record.state !== "pending") {
        if (now - record.createdAt > KEEP_MS) await deleteAction(record.key);
        continue;
      }
      // Logged out, or another resident logged in on this browser: the record waits for its owner.
      if (!session || session.expired || session.userID !== record.userID) {
        const waiting = text.queued(record.action, "needs_login");
        if (record.text !== waiting) {
          const updated = { ...record, text: waiting };
          await putAction(updated);
          announce(updated);
        }
        continue;
      }
      // The network's back, so a record that failed for want of one goes now; one the
      // server turned away (429, 5xx) keeps its back-off and Retry-After.
      if (record.nextAt > now && !(atOnce && record.network)) {
        nextAt = nextAt ? Math.min(nextAt, record.nextAt) : record.nextAt;
        continue;
      }
      // The screen says what happens now ("Enviando…"), not the last failure's sentence.
      const sending = text.queued(record.action, "sending");
      if (record.text !== sending && !offline()) {
        record = { ...record, text: sending };
        await putAction(record);
        announce(record);
      }
      const updated = await send(record, session);
      await putAction(updated);
      announce(updated);
      if (updated.state === "pending") {
        if (updated.nextAt) nextAt = nextAt ? Math.min(nextAt, updated.nextAt) : updated.nextAt;
      } else {
        finished.push(updated);
        try { await notify(updated); } catch { /* showing is best effort; the record is kept */ }
      }
    }
    return { finished, nextAt };
  });
}

/** The browser knows it has no network (then, and only then, the resident reads "Sem conexão"). */
function offline() {
  return typeof navigator !== "undefined" && navigator.onLine === false;
}

/** Records not finished yet (the page marks their visits "enviando"). */
export async function pendingActions() {
  return (await allActions()).filter((record) => record.state === "pending");
}

export async function recentActions() {
  return allActions();
}

/** One attempt of `record`; returns the record as it stands after the answer. */
async function send(record, session) {
  const zone = session.timeZone;
  const attempts = record.attempts + 1;
  const done = (ok, sentence, extra = {}) => ({ ...record, ...extra, attempts, state: "done", ok, text: sentence, finishedAt: Date.now() });
  try {
    const visit = await authorized("POST", `/v1/visits/${encodeURIComponent(record.visitID)}/resolve`, {
      body: { action: record.action }, idempotencyKey: record.key, companyID: record.companyID,
    });
    return done(true, text.resolved(record.action, visit.kind || record.kind), { visit });
  } catch (error) {
    if (error.code === SESSION_ENDED) {
      return { ...record, attempts, nextAt: 0, text: text.queued(record.action, "needs_login") };
    }
    if (isTransient(error)) {
      const delay = backoff(attempts, error, 60000);
      return { ...record, attempts, nextAt: Date.now() + delay, network: error.status === 0,
        text: text.queued(record.action, error.status !== 0 ? "server_busy" : offline() ? "unreachable" : "no_answer") };
    }
    const body = error.body || {};
    if (error.status === 409 && error.code === "VISIT_ALREADY_RESOLVED") {
      return done(false, text.alreadyResolved(body, session.userID, zone));
    }
    if (error.status === 409) {
      // VISIT_CLOSED and the rest say what, not when (and not in pt-BR): the visit says both.
      const visit = await readVisit(record, session);
      if (visit && visit.resolution) return done(false, text.alreadyResolvedVisit(visit.resolution, session.userID, zone));
      const status = (visit && visit.status) || body.status || "cancelled";
      return done(false, text.closed(status, (visit && visit.kind) || record.kind, visit ? visit.updated_at : null, zone));
    }
    if (error.status === 403) return done(false, text.REFUSED.forbidden, { refused: true });
    if (error.status === 404 && error.code) return done(false, text.REFUSED.visit_not_found, { refused: true });
    if (error.status === 404) {
      // A 404 without the API's envelope is a proxy's, not the server's word: try later.
      return { ...record, attempts, nextAt: Date.now() + backoff(attempts, error, 60000), text: text.queued(record.action, "server_busy") };
    }
    return done(false, text.REFUSED.invalid, { refused: true });
  }
}

async function readVisit(record, session) {
  try {
    return await authorized("GET", `/v1/visits/${encodeURIComponent(record.visitID)}`, { companyID: record.companyID || session.companyID });
  } catch {
    return null;
  }
}
