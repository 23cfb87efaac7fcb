// ThreadSanitizer false positive in Swift 6.3.1 on Linux (scripts/sanitizers/tsan.supp).
//   swiftc -parse-as-library -sanitize=thread continuation-resumed-before-suspend.swift -o repro
//   ./repro before   # the thread resumes while the task is still in the closure: data race reports
//   ./repro after    # the thread resumes once the task has suspended: none
// The object is handed over by the continuation alone, which the language orders.
import Foundation

final class Box: @unchecked Sendable { var a = 0; var b = 0; init(_ v: Int) { a = v; b = v } }
struct Handle: @unchecked Sendable { let continuation: CheckedContinuation<Box, Never> }

@main struct Repro {
    static func main() async {
        let resumeFirst = CommandLine.arguments.dropFirst().first == "before"
        var total = 0
        for i in 0..<100 {
            let box: Box = await withCheckedContinuation { continuation in
                let handle = Handle(continuation: continuation)
                Thread {
                    if !resumeFirst { usleep(5000) }
                    handle.continuation.resume(returning: Box(i))
                }.start()
                if resumeFirst { usleep(5000) }  // no synchronisation: only more time
            }
            total += box.a + box.b
        }
        print(total)
    }
}
