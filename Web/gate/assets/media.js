// Camera snapshot, location and voice message, each with errors in Portuguese.
//
// The photo is drawn from the live camera into a canvas and re-encoded as JPEG: what
// is uploaded is pixels only, so no EXIF (GPS, device model) can ride along, and it is
// scaled down to at most 1024 px so it fits the 2 MB limit on any phone.

const MAX_PHOTO_SIDE = 1024;
export const MAX_VOICE_SECONDS = 60;
const MAX_VOICE_BYTES = 1024 * 1024;
const MAX_WAV_BYTES = 2 * 1024 * 1024;

function mediaErrorMessage(error, what) {
  const name = error && error.name;
  if (name === "NotAllowedError" || name === "SecurityError") {
    return `Sem permissão para usar ${what}. Você pode liberar nas configurações do navegador — ou seguir sem.`;
  }
  if (name === "NotFoundError" || name === "OverconstrainedError") return `Este aparelho não tem ${what} disponível.`;
  if (name === "NotReadableError") return `${what[0].toUpperCase()}${what.slice(1)} está em uso por outro aplicativo.`;
  return `Não foi possível usar ${what} (${name || "erro desconhecido"}).`;
}

export function mediaAvailable() {
  return !!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia);
}

export class Camera {
  constructor(video) {
    this.video = video;
    this.stream = null;
  }

  async open() {
    if (!mediaAvailable()) throw new Error("Este navegador não permite usar a câmera por aqui.");
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({
        video: { facingMode: "user", width: { ideal: 1280 }, height: { ideal: 720 } }, audio: false,
      });
    } catch (error) {
      throw new Error(mediaErrorMessage(error, "a câmera"));
    }
    this.video.srcObject = this.stream;
    await this.video.play().catch(() => {});
    // Wait for the first frame so the snapshot is not black.
    if (!this.video.videoWidth) {
      await new Promise((resolve) => {
        const done = () => { this.video.removeEventListener("loadeddata", done); resolve(); };
        this.video.addEventListener("loadeddata", done);
        setTimeout(done, 3000);
      });
    }
  }

  /** A JPEG Blob of the current frame (metadata-free), at most 1024 px on its long side. */
  async snapshot() {
    const width = this.video.videoWidth;
    const height = this.video.videoHeight;
    if (!width || !height) throw new Error("A câmera ainda não mostrou imagem; tente de novo.");
    const scale = Math.min(1, MAX_PHOTO_SIDE / Math.max(width, height));
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    canvas.getContext("2d").drawImage(this.video, 0, 0, canvas.width, canvas.height);
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.8));
    if (!blob) throw new Error("Não foi possível gerar a foto; tente de novo.");
    return blob;
  }

  close() {
    if (this.stream) this.stream.getTracks().forEach((track) => track.stop());
    this.stream = null;
    this.video.srcObject = null;
  }
}

/** One reading of the position, with its accuracy; explains refusals and timeouts. */
export function locate() {
  return new Promise((resolve, reject) => {
    if (!("geolocation" in navigator)) {
      reject(new Error("Este navegador não informa a localização. Tudo bem: dá para chamar sem."));
      return;
    }
    navigator.geolocation.getCurrentPosition(
      (position) => resolve({
        lat: position.coords.latitude,
        lon: position.coords.longitude,
        accuracy_m: Math.min(100000, Math.max(0, Math.round(position.coords.accuracy || 0))),
      }),
      (error) => {
        const messages = {
          1: "Você não permitiu a localização. Tudo bem: dá para chamar sem.",
          2: "Não foi possível descobrir sua localização agora. Dá para chamar sem.",
          3: "A localização demorou demais. Tente de novo ou chame sem.",
        };
        reject(new Error(messages[error.code] || "Não foi possível obter a localização. Dá para chamar sem."));
      },
      { enableHighAccuracy: true, timeout: 15000, maximumAge: 30000 },
    );
  });
}

/** The recording format the gate asks for where the browser has an AAC encoder. */
export const AAC_IN_MP4 = "audio/mp4;codecs=mp4a.40.2";
/** Speech quality for the WAV fallback: 16 kHz, mono, 16-bit PCM (1.92 MB a minute). */
export const WAV_SAMPLE_RATE = 16000;

/**
 * A RIFF/WAVE file of 16-bit PCM, mono, from samples in [-1, 1] (clamped). Written by
 * hand: a 44-byte header ("fmt " chunk, format 1), then the little-endian samples.
 */
export function encodeWAV(samples, sampleRate) {
  const dataBytes = samples.length * 2;
  const buffer = new ArrayBuffer(44 + dataBytes);
  const view = new DataView(buffer);
  const ascii = (offset, text) => { for (let i = 0; i < text.length; i++) view.setUint8(offset + i, text.charCodeAt(i)); };
  ascii(0, "RIFF");
  view.setUint32(4, 36 + dataBytes, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  view.setUint32(16, 16, true);              // fmt chunk size
  view.setUint16(20, 1, true);               // PCM
  view.setUint16(22, 1, true);               // mono
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);  // byte rate = rate × block align
  view.setUint16(32, 2, true);               // block align = channels × 2 bytes
  view.setUint16(34, 16, true);              // bits a sample
  ascii(36, "data");
  view.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) {
    const sample = Math.max(-1, Math.min(1, samples[i] || 0));
    view.setInt16(44 + i * 2, sample < 0 ? sample * 0x8000 : sample * 0x7fff, true);
  }
  return buffer;
}

/**
 * The recording as a 16 kHz mono WAV: decoded by the browser, then rendered through an
 * OfflineAudioContext at 16 kHz with one output channel, which resamples and mixes down.
 */
export async function recordingToWAV(blob) {
  const Offline = globalThis.OfflineAudioContext || globalThis.webkitOfflineAudioContext;
  if (!Offline) throw new Error("no OfflineAudioContext");
  const encoded = await blob.arrayBuffer();
  const decoder = new Offline(1, 1, WAV_SAMPLE_RATE);
  const decoded = await new Promise((resolve, reject) => {
    // The callback form too: older Safari's decodeAudioData returns no promise.
    const promise = decoder.decodeAudioData(encoded, resolve, reject);
    if (promise && promise.then) promise.then(resolve, reject);
  });
  const frames = Math.max(1, Math.ceil(decoded.duration * WAV_SAMPLE_RATE));
  const context = new Offline(1, frames, WAV_SAMPLE_RATE);
  const source = context.createBufferSource();
  source.buffer = decoded;
  source.connect(context.destination);
  source.start(0);
  const rendered = await context.startRendering();
  return new Blob([encodeWAV(rendered.getChannelData(0), WAV_SAMPLE_RATE)], { type: "audio/wav" });
}

/**
 * Records up to 60 s: AAC in MP4 where the browser can, otherwise whatever it records,
 * converted to WAV before it is offered for upload.
 */
export class VoiceRecorder {
  constructor({ onTick, onStop }) {
    this.onTick = onTick;
    this.onStop = onStop;
    this.recorder = null;
    this.stream = null;
    this.chunks = [];
    this.started = 0;
    this.timer = 0;
  }

  static supported() {
    return mediaAvailable() && typeof MediaRecorder !== "undefined";
  }

  // AAC in MP4 wherever the browser records it (Safari; Chrome and Edge where the
  // platform has an AAC encoder): small, and the iPhone app's player and every browser
  // play it. Otherwise the browser's own choice (WebM/Ogg Opus in Firefox and Chromium
  // builds without AAC), which `uploadsWAV` turns into WAV (decision 0077). Never a bare
  // "audio/mp4": Chrome would put Opus in it.
  static mimeType() {
    if (MediaRecorder.isTypeSupported && MediaRecorder.isTypeSupported(AAC_IN_MP4)) return AAC_IN_MP4;
    for (const type of ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"]) {
      if (MediaRecorder.isTypeSupported && MediaRecorder.isTypeSupported(type)) return type;
    }
    return "";
  }

  /** Whether a recording asked for as `mimeType` is converted to WAV before upload. */
  static uploadsWAV(mimeType) {
    return mimeType !== AAC_IN_MP4;
  }

  async start() {
    if (!VoiceRecorder.supported()) throw new Error("Este navegador não grava áudio.");
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
    } catch (error) {
      throw new Error(mediaErrorMessage(error, "o microfone"));
    }
    const mimeType = VoiceRecorder.mimeType();
    this.chunks = [];
    this.recorder = new MediaRecorder(this.stream, { mimeType, audioBitsPerSecond: 32000 });
    this.recorder.ondataavailable = (event) => { if (event.data && event.data.size) this.chunks.push(event.data); };
    this.recorder.onstop = async () => {
      clearInterval(this.timer);
      this.stream.getTracks().forEach((track) => track.stop());
      const type = (this.recorder.mimeType || mimeType || "audio/webm").split(";")[0];
      let blob = new Blob(this.chunks, { type });
      const seconds = Math.round((Date.now() - this.started) / 1000);
      if (!blob.size) {
        this.onStop(null, "Nada foi gravado; tente de novo.");
        return;
      }
      if (VoiceRecorder.uploadsWAV(mimeType)) {
        try {
          blob = await recordingToWAV(blob);
        } catch (error) {
          // The original still plays in the resident's browser; only the iPhone cannot.
          console.warn("recado kept in its recorded format:", error);
        }
      }
      const limit = blob.type === "audio/wav" ? MAX_WAV_BYTES : MAX_VOICE_BYTES;
      if (blob.size > limit) {
        this.onStop(null, "O recado ficou grande demais; grave um mais curto.");
      } else {
        this.onStop(blob, "", seconds);
      }
    };
    this.started = Date.now();
    this.recorder.start(1000);
    this.timer = setInterval(() => {
      const seconds = Math.floor((Date.now() - this.started) / 1000);
      this.onTick(seconds);
      // Stop a little early: the server refuses anything over 60 s.
      if (seconds >= MAX_VOICE_SECONDS - 2) this.stop();
    }, 250);
  }

  stop() {
    if (this.recorder && this.recorder.state !== "inactive") this.recorder.stop();
  }
}
