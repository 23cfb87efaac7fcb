// Follows one visit live: a WebSocket on /v1/realtime opened with a one-time ticket
// (the visitor token never goes into a URL), reconnecting with ?since=<last seq>, and
// polling GET /v1/visitor/visit every few seconds whenever the socket is not up. The
// REST answer is the truth: it is read at start, after every (re)connection and after
// `resync_required`, so a missed frame can never leave the page on a stale state.

import { request } from "./api.js";

const TERMINAL = new Set(["resolved", "cancelled", "expired"]);
const POLL_MS = 3000;

export class VisitFollower {
  /**
   * @param {string} token visitor token
   * @param {{onVisit: (v: {status: string, action?: string}) => void,
   *          onConnection: (state: "live"|"polling"|"offline") => void,
   *          onError: (message: string) => void,
   *          onCall?: (frame: {type: string, data: object}) => void}} handlers
   */
  constructor(token, handlers) {
    this.token = token;
    this.handlers = handlers;
    this.since = null;
    this.socket = null;
    this.stopped = false;
    this.failures = 0;
    this.reconnectTimer = 0;
    this.pollTimer = 0;
    this.status = "";
  }

  start() {
    this.refresh();
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.pollTimer);
    this.pollTimer = 0;
    if (this.socket) {
      const socket = this.socket;
      this.socket = null;
      socket.onclose = null;
      socket.close(1000);
    }
  }

  /** Sends one frame on the socket if it is open now; false otherwise (the caller retries). */
  send(frame) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  /** Reads the visit over REST; reports it, or the error if the read failed. */
  async refresh() {
    try {
      const visit = await request("GET", "/v1/visitor/visit", { token: this.token, what: "chamada" });
      this.report({ status: visit.status, action: visit.resolution ? visit.resolution.action : undefined });
      return true;
    } catch (error) {
      if (error.status === 401 || error.status === 404) {
        this.handlers.onError(error.message);
        this.stop();
      } else {
        this.handlers.onConnection("offline");
      }
      return false;
    }
  }

  report(state) {
    if (this.stopped) return;
    this.status = state.status;
    this.handlers.onVisit(state);
    if (TERMINAL.has(state.status)) this.stop();
  }

  async connect() {
    if (this.stopped) return;
    let ticket;
    try {
      ({ ticket } = await request("POST", "/v1/realtime/tickets", { token: this.token, what: "chamada" }));
    } catch (error) {
      if (error.status === 401) {
        this.handlers.onError(error.message);
        this.stop();
        return;
      }
      this.failed();
      return;
    }
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    let url = `${scheme}//${location.host}/v1/realtime?ticket=${encodeURIComponent(ticket)}`;
    if (this.since !== null) url += `&since=${this.since}`;
    let socket;
    try {
      socket = new WebSocket(url);
    } catch {
      this.failed();
      return;
    }
    this.socket = socket;
    let opened = false;
    socket.onopen = () => {
      opened = true;
      this.failures = 0;
      this.stopPolling();
      this.handlers.onConnection("live");
      // Whatever happened while we were away: the REST state wins.
      this.refresh();
    };
    socket.onmessage = (message) => this.received(message.data);
    socket.onclose = () => {
      if (this.socket === socket) this.socket = null;
      if (this.stopped) return;
      if (opened) this.failures = 0;
      this.failed();
    };
    // onerror is always followed by onclose, which decides what to do.
    socket.onerror = () => {};
  }

  received(text) {
    let frame;
    try { frame = JSON.parse(text); } catch { return; }
    if (!frame || typeof frame.type !== "string") return;
    if (typeof frame.seq === "number") this.since = frame.seq;
    if (frame.type === "resync_required") {
      this.refresh();
      return;
    }
    if (frame.type.startsWith("call.") || frame.type === "error") {
      // Call signaling (and the server's answer to a refused call frame).
      if (this.handlers.onCall) this.handlers.onCall(frame);
      return;
    }
    const data = frame.data || {};
    if (!frame.type.startsWith("visit.") || typeof data.status !== "string") return;
    if (data.status === "resolved" && !data.action) {
      // A side event of the resolution (e.g. ring_cancelled) names the status but not
      // the decision; the visit.resolved frame or the REST state carries it.
      this.refresh();
      return;
    }
    this.report({ status: data.status, action: data.action });
  }

  /** The socket failed: poll meanwhile and try again later, backing off to 15 s. */
  failed() {
    if (this.stopped) return;
    this.failures += 1;
    this.startPolling();
    const delay = Math.min(15000, 1000 * 2 ** Math.min(this.failures - 1, 4));
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  startPolling() {
    if (this.pollTimer || this.stopped) return;
    this.handlers.onConnection("polling");
    const tick = async () => {
      if (this.stopped || !this.pollTimer) return;
      await this.refresh();
      if (this.pollTimer && !this.stopped) this.pollTimer = setTimeout(tick, POLL_MS);
    };
    this.pollTimer = setTimeout(tick, 0);
  }

  stopPolling() {
    clearTimeout(this.pollTimer);
    this.pollTimer = 0;
  }
}
