// The coplay executable: parse the command line, then run an agent or a benchmark.
import CoplayHarness
import CoplayRuntime
import Foundation
import Glibc

let status: Int32
switch CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst())) {
case .success(.help):
    StandardStreams.writeOutput(CommandLineOptions.usage)
    status = 0
case .success(.version):
    StandardStreams.writeOutput("coplay \(CoplayVersion.current) (wire format v1)")
    status = 0
case .success(.runAgent(let configuration)):
    do {
        let shell = try AgentShell(configuration: configuration)
        status = await shell.run()
    } catch {
        StandardStreams.writeError("coplay: cannot start: \(error)")
        status = 1
    }
case .success(.bench(let request)):
    status = Benchmarks.run(
        Benchmarks.Options(
            kind: request.kind.rawValue, rounds: request.rounds, agents: request.agents, seconds: request.seconds,
            executable: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]))
case .failure(let error):
    StandardStreams.writeError("coplay: \(error.message)\nTry 'coplay --help'.")
    status = 2
}
exit(status)
