// What kind of phone this browser runs on, read from the user agent (and, in Chromium,
// whose reduced user agent no longer names the model, from User-Agent Client Hints): the
// platform and the maker. Makers' power savers stop the browser's pushes on Android — the
// resident's ringing path in the web app — so Settings shows that maker's steps to exempt
// the browser, and the device registration reports the maker (`capabilities.manufacturer`)
// for the admin panel's battery risk flag. No DOM here (the service worker imports it).

/** Model or browser markers → maker, first match wins (lowercase, as the server compares). */
const MAKERS = [
  [/xiaomi|miuibrowser|redmi|\bpoco|\bmi [0-9a-z]|\b2[0-9]{3}[0-9a-z]{3,6}[a-z]{1,3}\b/i, "xiaomi"],
  [/samsung|\bsm-[a-z0-9]+/i, "samsung"],
  [/huawei|honor|\b(ele|vog|ane|mar|jny|lya|nam|noh|bah|agr)-[a-z0-9]+/i, "huawei"],
  [/motorola|\bmoto\b|\bmoto [a-z0-9]|\bxt[0-9]{4}/i, "motorola"],
  [/oneplus|\b(gm|hd|kb|le|ne|cph2[0-9]{3}) ?[0-9]{4}/i, "oneplus"],
  [/\bcph[0-9]{4}|oppo/i, "oppo"],
  [/\brmx[0-9]{4}|realme/i, "realme"],
  [/\bvivo\b|\bv[0-9]{4}[a-z]?\b/i, "vivo"],
  [/asus|zenfone/i, "asus"],
];

/** "ios", "android" or "other", and the maker ("" when unknown). `model` from Client Hints. */
export function describeDevice(userAgent = "", model = "") {
  const ua = String(userAgent);
  const platform = /iphone|ipad|ipod/i.test(ua) ? "ios" : /android/i.test(ua) ? "android" : "other";
  if (platform === "ios") return { platform, maker: "apple", osVersion: iosVersion(ua) };
  if (platform !== "android") return { platform, maker: "", osVersion: "" };
  const osVersion = (/android ([0-9.]+)/i.exec(ua) || [])[1] || "";
  const haystack = `${model} ${(/\(([^)]*)\)/.exec(ua) || [])[1] || ""} ${ua}`;
  const found = MAKERS.find(([pattern]) => pattern.test(haystack));
  return { platform, maker: found ? found[1] : "", osVersion: osVersion ? `Android ${osVersion}` : "Android" };
}

function iosVersion(ua) {
  const match = /OS ([0-9]+)[_.]([0-9]+)/.exec(ua);
  return match ? `iOS ${match[1]}.${match[2]}` : "iOS";
}

/** This browser's device, using Client Hints' model where the browser offers it. */
export async function currentDevice() {
  let model = "";
  try {
    const hints = typeof navigator !== "undefined" && navigator.userAgentData;
    if (hints && hints.getHighEntropyValues) model = (await hints.getHighEntropyValues(["model"])).model || "";
  } catch { /* no hints: the user agent alone */ }
  return describeDevice(typeof navigator !== "undefined" ? navigator.userAgent : "", model);
}

const BROWSER_STEP = "Procure o navegador que você usa para o app (Chrome, por exemplo)";

/**
 * The maker's steps to let the browser run in the background, in pt-BR; null on a phone
 * whose maker does not stop pushes (or not on Android).
 */
export function batterySteps(maker) {
  switch (maker) {
    case "xiaomi": return { name: "Xiaomi (Redmi, POCO)", steps: [
      "Abra Configurações → Apps → Gerenciar apps.", `${BROWSER_STEP} e toque nele.`,
      "Economia de bateria → Sem restrições.", "Ative também Início automático (Autostart)."] };
    case "samsung": return { name: "Samsung", steps: [
      "Abra Configurações → Aplicativos.", `${BROWSER_STEP} e toque nele.`,
      "Bateria → Sem restrições.", "Em Cuidados com o dispositivo → Bateria → Limites de uso em segundo plano, tire o navegador de Aplicativos em suspensão."] };
    case "huawei": return { name: "Huawei (Honor)", steps: [
      "Abra Configurações → Bateria → Inicialização de apps.", `${BROWSER_STEP}.`,
      "Desligue Gerenciar automaticamente e ative as três opções: Inicialização automática, Inicialização secundária e Executar em segundo plano."] };
    case "motorola": return { name: "Motorola", steps: [
      "Abra Configurações → Apps → Ver todos os apps.", `${BROWSER_STEP} e toque nele.`,
      "Bateria → Sem restrições (ou Uso da bateria em segundo plano: permitir)."] };
    case "oneplus": case "oppo": case "realme": return { name: { oneplus: "OnePlus", oppo: "OPPO", realme: "realme" }[maker], steps: [
      "Abra Configurações → Bateria → Otimização de bateria (ou Uso de bateria do app).", `${BROWSER_STEP}.`,
      "Escolha Não otimizar / Permitir atividade em segundo plano.", "Ative também Inicialização automática, se houver."] };
    case "vivo": return { name: "vivo", steps: [
      "Abra Configurações → Bateria → Consumo de energia em segundo plano.", `${BROWSER_STEP}.`,
      "Permita o consumo alto em segundo plano."] };
    case "asus": return { name: "ASUS", steps: [
      "Abra Configurações → Apps → Acesso especial → Otimização de bateria.", `${BROWSER_STEP}.`, "Escolha Não otimizar."] };
    default: return null;
  }
}
