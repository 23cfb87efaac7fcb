// fuzz/media-photo: MediaSniffer.photo on arbitrary bytes (JPEG and PNG metadata strippers).
// Besides "never traps": stripping is idempotent (what we store strips to itself) and
// never grows the file beyond the end-of-image marker it may add.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMediaPhoto(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    guard let photo = try? MediaSniffer.photo(bytes) else { return 0 }
    invariant(photo.bytes.count <= bytes.count, "stripped \(bytes.count) bytes into \(photo.bytes.count)")
    do {
        let again = try MediaSniffer.photo(photo.bytes)
        invariant(again == photo, "stripping is not idempotent")
    } catch {
        invariant(false, "the stripped photo is refused: \(error)")
    }
    return 0
}
