import Foundation

// Top-level code here is MainActor-isolated: the benchmarks live in other files.
signal(SIGPIPE, SIG_IGN)
exit(await BenchCommand.run(Array(CommandLine.arguments.dropFirst())))
