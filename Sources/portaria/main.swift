import Foundation
import PortariaServer

// Top-level code here is MainActor-isolated: keep C callbacks out of this file.
// Before anything touches OpenSSL (Crypto.skipCleanupAtExit says why).
Crypto.skipCleanupAtExit()
signal(SIGPIPE, SIG_IGN)
let exitCode = await CommandLineTool.run(Array(CommandLine.arguments.dropFirst()))
exit(exitCode)
