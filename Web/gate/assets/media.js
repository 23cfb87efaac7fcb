// Camera snapshot, location and voice message, each with errors in Portuguese.
//
// The photo is drawn from the live camera into a canvas and re-encoded as JPEG: what
// is uploaded is pixels only, so no EXIF (GPS, device model) can ride along, and it is
// scaled down to at most 1024 px so it fits the 2 MB limit on any phone.

const MAX_PHOTO_SIDE = 1024;
export const MAX_VOICE_SECONDS = 60;
const MAX_VOICE_BYTES = 1024 * 1024;

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

/** Records up to 60 s of Opus audio (WebM or Ogg, whichever the browser makes). */
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

  // AAC in MP4 first, wherever the browser records it (Safari; Chrome and Edge where the
  // platform has an AAC encoder): the iPhone app's player and every browser play it.
  // WebM/Ogg Opus otherwise (Firefox, other Chromium builds), which browsers play and the
  // iPhone app cannot (decision 0077). Never a bare "audio/mp4": Chrome would put Opus in
  // it, which neither the server's sniffer nor the iPhone accepts.
  static mimeType() {
    for (const type of ["audio/mp4;codecs=mp4a.40.2", "audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"]) {
      if (MediaRecorder.isTypeSupported && MediaRecorder.isTypeSupported(type)) return type;
    }
    return "";
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
    this.recorder.onstop = () => {
      clearInterval(this.timer);
      this.stream.getTracks().forEach((track) => track.stop());
      const type = (this.recorder.mimeType || mimeType || "audio/webm").split(";")[0];
      const blob = new Blob(this.chunks, { type });
      const seconds = Math.round((Date.now() - this.started) / 1000);
      if (blob.size > MAX_VOICE_BYTES) {
        this.onStop(null, "O recado ficou grande demais; grave um mais curto.");
      } else if (!blob.size) {
        this.onStop(null, "Nada foi gravado; tente de novo.");
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
