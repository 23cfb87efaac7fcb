// One WebRTC video call between the visitor's gate page and the resident device that
// answered, signaled over /v1/realtime (decision 0009). Shared by the gate page and the
// resident web app (both import it from `Web/shared/`): same frames, two roles.
//
// - The visitor offers right after `visit.answered`; the resident only ever answers
//   (the visitor's offer wins glare, so the resident never makes one).
// - Incoming frames are handled strictly in order (one promise chain), so a candidate
//   can never be applied before the description it belongs to.
// - Local candidates wait until our own description was sent: the server refuses
//   candidates at the wrong moment (CALL_STATE_CONFLICT).
// - A frame that cannot be sent now (socket reconnecting) waits in a small outbox; the
//   server keeps the call for 30 s while a side is away.
// - `GET /v1/calls/ice_servers` says whether video can connect at all and which candidates
//   this side may gather (decision 0066): a resident gathers relay candidates only, so not
//   even its connectivity checks leave from its own addresses; without a relay the call is
//   "unavailable" before any camera opens, and the decision goes on without video.
// - A browser without WebRTC (no `RTCPeerConnection`, as in Debian's WebKitGTK) is
//   "unavailable" the same way, whatever the server offers: the call screen and its
//   decision buttons stay, and the other side's negotiation ends on the server's timeout.

const END_TEXTS = {
  hangup: { visitor: "O visitante encerrou a chamada.", resident: "O morador encerrou a chamada." },
  participant_left: "A outra pessoa saiu da chamada.",
  negotiation_timeout: "Não foi possível conectar o vídeo.",
  max_duration: "A chamada chegou ao tempo máximo.",
  visit_closed: "Chamada encerrada.",
  server_shutdown: "Chamada encerrada pelo servidor.",
};

const UNAVAILABLE_TEXT = {
  visitor: "Vídeo indisponível neste condomínio: aguarde a decisão do morador.",
  resident: "Vídeo indisponível neste servidor (sem relay de vídeo): decida pelos botões.",
};

const NO_WEBRTC_TEXT = {
  visitor: "Vídeo indisponível neste navegador: aguarde a decisão do morador.",
  resident: "Vídeo indisponível neste navegador: decida pelos botões.",
};

/** Camera and microphone, then microphone only, then nothing (the call still shows the other side). */
async function openMedia() {
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) return null;
  const video = { facingMode: "user", width: { ideal: 640 }, height: { ideal: 480 } };
  for (const constraints of [{ video, audio: true }, { video: false, audio: true }]) {
    try {
      return await navigator.mediaDevices.getUserMedia(constraints);
    } catch { /* try with less */ }
  }
  return null;
}

/** Plays a video; if autoplay with sound is refused, plays it muted and says so. */
async function play(video, onMutedFallback) {
  try {
    await video.play();
  } catch (error) {
    if (error && error.name === "AbortError") return; // a newer srcObject replaced it
    video.muted = true;
    await video.play().catch(() => {});
    if (onMutedFallback) onMutedFallback();
  }
}

export class VideoCall {
  /**
   * @param {{role: "visitor"|"resident", visitID: string,
   *          send: (frame: object) => boolean,
   *          iceServers: () => Promise<{ice_servers?: RTCIceServer[], calls_available?: boolean,
   *                                         ice_transport_policy?: "all"|"relay"}>,
   *          localVideo: HTMLVideoElement, remoteVideo: HTMLVideoElement,
   *          onState: (state: "connecting"|"live"|"ended"|"unavailable", text: string) => void,
   *          onMuted?: () => void}} options
   */
  constructor(options) {
    this.options = options;
    this.role = options.role;
    this.visitID = options.visitID;
    this.pc = null;
    this.stream = null;
    this.mediaPromise = null;
    this.configPromise = null;
    this.chain = Promise.resolve();
    this.localCandidates = [];
    this.descriptionSent = false;
    this.outbox = [];
    this.flushTimer = 0;
    this.retries = 0;
    this.ended = false;
  }

  /** Opens camera/mic now (the resident calls this on "Atender", before the offer comes). */
  prepare() {
    if (!this.mediaPromise) {
      this.mediaPromise = openMedia().then((stream) => {
        if (this.ended) {
          if (stream) stream.getTracks().forEach((track) => track.stop());
          return null;
        }
        this.stream = stream;
        if (stream) {
          this.options.localVideo.srcObject = stream;
          play(this.options.localVideo);
        }
        return stream;
      });
    }
    return this.mediaPromise;
  }

  /** The visitor's side: media, connection, offer. */
  start() {
    this.state("connecting", "Conectando o vídeo…");
    this.enqueue(async () => {
      if (!(await this.available())) return;
      const stream = await this.prepare();
      const pc = await this.connection();
      if (!pc) return;
      for (const kind of ["audio", "video"]) {
        const track = stream && stream.getTracks().find((t) => t.kind === kind);
        if (track) pc.addTrack(track, stream);
        else pc.addTransceiver(kind, { direction: "recvonly" });
      }
      await pc.setLocalDescription(await pc.createOffer());
      this.transmit("call.offer", { sdp: pc.localDescription.sdp });
      this.descriptionSent = true;
      this.flushCandidates();
    });
  }

  /** Waits for the offer (the resident's side). */
  await() {
    this.state("connecting", "Conectando o vídeo…");
    this.enqueue(async () => {
      if (await this.available()) this.prepare();
    });
  }

  /** The server's call configuration, fetched once per call (the TURN credential is fresh). */
  config() {
    if (!this.configPromise) {
      this.configPromise = Promise.resolve().then(() => this.options.iceServers()).catch(() => ({}));
    }
    return this.configPromise;
  }

  /**
   * False (and the call shown as unavailable, nothing opened) when this browser has no
   * WebRTC or the server has no way to connect video.
   */
  async available() {
    if (typeof RTCPeerConnection !== "function") return this.unavailable(NO_WEBRTC_TEXT[this.role]);
    const config = await this.config();
    if (this.ended) return false;
    if (config && config.calls_available === false) return this.unavailable(UNAVAILABLE_TEXT[this.role]);
    return true;
  }

  /** A frame from the realtime socket (`call.*` or `error`); ignores other visits' frames. */
  handle(frame) {
    if (this.ended || !frame) return;
    const data = frame.data || {};
    if (frame.type === "error") {
      this.enqueue(() => this.serverError(data.code || ""));
      return;
    }
    if (data.visit_id !== this.visitID) return;
    switch (frame.type) {
      case "call.offer":
        if (this.role === "resident") this.enqueue(() => this.answerOffer(data.sdp));
        break;
      case "call.answer":
        if (this.role === "visitor") {
          this.enqueue(async () => {
            if (this.pc && this.pc.signalingState === "have-local-offer") {
              await this.pc.setRemoteDescription({ type: "answer", sdp: data.sdp });
            }
          });
        }
        break;
      case "call.ice":
        this.enqueue(async () => {
          if (!this.pc || !this.pc.remoteDescription) return;
          const c = data.candidate;
          await this.pc.addIceCandidate(c ? {
            candidate: c.candidate, sdpMid: c.sdp_mid ?? null, sdpMLineIndex: c.sdp_m_line_index ?? null,
          } : null).catch(() => { /* a candidate we cannot use is not fatal */ });
        });
        break;
      case "call.ended": {
        const reason = data.reason || "";
        const text = reason === "hangup"
          ? (data.ended_by === this.role ? "Chamada encerrada." : END_TEXTS.hangup[data.ended_by] || "Chamada encerrada.")
          : END_TEXTS[reason] || "Chamada encerrada.";
        this.close(text);
        break;
      }
      default:
        break;
    }
  }

  /** "Encerrar": tells the other side, then closes here. */
  hangup() {
    if (this.ended) return;
    this.transmit("call.hangup", {});
    this.close("Chamada encerrada.");
  }

  /** Stops camera and microphone and closes the connection (no frame sent). */
  close(text = "Chamada encerrada.") {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.flushTimer);
    if (this.pc) {
      this.pc.ontrack = null;
      this.pc.onicecandidate = null;
      this.pc.onconnectionstatechange = null;
      this.pc.close();
    }
    this.pc = null;
    if (this.stream) this.stream.getTracks().forEach((track) => track.stop());
    this.stream = null;
    for (const video of [this.options.localVideo, this.options.remoteVideo]) {
      video.pause();
      video.srcObject = null;
    }
    this.options.onState("ended", text);
  }

  // MARK: internals

  /** Ends the call before anything opened, showing `text`; false, for `available()` to return. */
  unavailable(text) {
    if (this.ended) return false;
    this.ended = true;
    this.options.onState("unavailable", text);
    return false;
  }

  state(state, text) {
    if (!this.ended) this.options.onState(state, text);
  }

  enqueue(step) {
    this.chain = this.chain.then(() => (this.ended ? undefined : step())).catch((error) => {
      if (this.ended) return;
      console.error("call:", error);
      this.transmit("call.hangup", {});
      this.close("Não foi possível conectar o vídeo.");
    });
  }

  async connection() {
    if (this.pc) return this.pc;
    const config = (await this.config()) || {};
    if (this.ended) return null;
    const pc = new RTCPeerConnection({
      iceServers: config.ice_servers || [],
      iceTransportPolicy: config.ice_transport_policy === "relay" ? "relay" : "all",
    });
    this.pc = pc;
    pc.onicecandidate = (event) => {
      const c = event.candidate;
      if (c && !c.candidate) return; // end of one m-line: the final null covers it
      const candidate = c ? { candidate: c.candidate, sdp_mid: c.sdpMid, sdp_m_line_index: c.sdpMLineIndex } : null;
      this.localCandidates.push(candidate);
      if (this.descriptionSent) this.flushCandidates();
    };
    pc.ontrack = (event) => {
      const video = this.options.remoteVideo;
      const stream = event.streams[0] || new MediaStream([event.track]);
      if (video.srcObject !== stream) {
        video.srcObject = stream;
        play(video, this.options.onMuted);
      }
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === "connected") this.state("live", "Em chamada");
      else if (pc.connectionState === "failed") {
        this.transmit("call.hangup", {});
        this.close("A conexão de vídeo caiu.");
      }
    };
    return pc;
  }

  async answerOffer(sdp) {
    const stream = await this.prepare();
    const pc = await this.connection();
    if (!pc) return;
    const first = !pc.remoteDescription;
    await pc.setRemoteDescription({ type: "offer", sdp });
    if (first && stream) {
      // The offer's transceivers take our tracks (addTrack reuses a matching one).
      for (const track of stream.getTracks()) pc.addTrack(track, stream);
      for (const transceiver of pc.getTransceivers()) {
        if (transceiver.sender.track) transceiver.direction = "sendrecv";
      }
    }
    await pc.setLocalDescription(await pc.createAnswer());
    this.transmit("call.answer", { sdp: pc.localDescription.sdp });
    this.descriptionSent = true;
    this.flushCandidates();
  }

  /** The visitor's offer may beat the server opening the call by a moment: offer again. */
  async serverError(code) {
    if (code !== "CALL_NOT_FOUND" || this.role !== "visitor" || !this.pc) return;
    if (this.pc.signalingState !== "have-local-offer" || this.retries >= 3) return;
    this.retries += 1;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // By now the description carries the gathered candidates too.
    if (!this.ended && this.pc && this.pc.signalingState === "have-local-offer") {
      this.transmit("call.offer", { sdp: this.pc.localDescription.sdp });
    }
  }

  flushCandidates() {
    for (const candidate of this.localCandidates.splice(0)) this.transmit("call.ice", { candidate });
  }

  transmit(type, data) {
    this.outbox.push({ type, data: { visit_id: this.visitID, ...data } });
    this.flush();
  }

  flush() {
    clearTimeout(this.flushTimer);
    while (this.outbox.length && this.options.send(this.outbox[0])) this.outbox.shift();
    if (this.outbox.length && !this.ended) this.flushTimer = setTimeout(() => this.flush(), 500);
  }
}
