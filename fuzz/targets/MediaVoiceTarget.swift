// fuzz/media-voice: MediaSniffer.voice on arbitrary bytes (Ogg/Opus, WebM/Opus, M4A, WAV).
// Any input must end in a Voice or a thrown Failure; a trap is a finding.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMediaVoice(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    do {
        let voice = try MediaSniffer.voice(bytes)
        invariant(voice.durationMs >= 0 && voice.durationMs <= MediaSniffer.maxVoiceMilliseconds + MediaSniffer.voiceToleranceMilliseconds,
                  "accepted duration \(voice.durationMs) ms")
    } catch {
        if case .tooLong(let ms) = error {
            invariant(ms > MediaSniffer.maxVoiceMilliseconds && ms <= MediaSniffer.durationCapMilliseconds, "tooLong(\(ms))")
        }
    }
    return 0
}
