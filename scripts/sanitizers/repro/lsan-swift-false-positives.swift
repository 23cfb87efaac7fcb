// LeakSanitizer reports on live Swift values (scripts/sanitizers/lsan.supp).
//   swiftc -sanitize=address lsan-swift-false-positives.swift -o repro
//   ASAN_OPTIONS=detect_leaks=1 ./repro
// Expected with this toolchain (6.3.1): a 32-byte direct leak from formWeakReference (a weak
// reference's side table of an object that is still alive), a 65-byte direct leak from
// Data.InlineSlice (a Data held by a static), and 10 × 4096 bytes from readBytesFromFile
// (ten reads of an empty file). Nothing here is lost except the last.
import Foundation

final class Bus {}
final class Holder { weak var bus: Bus?; init(_ bus: Bus) { self.bus = bus } }
let bus = Bus()
do { _ = Holder(bus) }

enum Fixtures { static let body = try! JSONEncoder().encode(["message": String(repeating: "x", count: 60)]) }
print(Fixtures.body.count)

let empty = FileManager.default.temporaryDirectory.appendingPathComponent("lsan-empty-\(getpid())").path
_ = FileManager.default.createFile(atPath: empty, contents: nil)
for _ in 0..<10 { _ = FileManager.default.contents(atPath: empty) }
try? FileManager.default.removeItem(atPath: empty)
print(ObjectIdentifier(bus))
