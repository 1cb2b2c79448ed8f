// The coplay executable: parse the command line, then run an agent.
import CoplayCore
import CoplayRuntime
import Glibc

let status: Int32
switch CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst())) {
case .success(.help(let topic)):
    StandardStreams.writeOutput(CommandLineOptions.help(topic))
    status = 0
case .success(.version):
    StandardStreams.writeOutput("coplay \(CoplayVersion.current) (wire format v1)")
    status = 0
case .success(.dump(let path, let json, let keys)):
    status = Dump.run(path: path, json: json, keys: keys)
case .success(.keygen):
    StandardStreams.writeOutput(KeyFile.generate())
    status = 0
case .success(.control(let path, let request)):
    status = ControlClient.run(path: path, request: request)
case .success(.web(let host, let port, let root, let media)):
    status = CommandLineOptions.runWeb(host: host, port: port, root: root, media: media)
case .success(.party(let plan)):
    status = await Party.run(plan)
case .success(.invite(let invitation, let qr)):
    status = CommandLineOptions.runInvite(invitation, qr: qr)
case .success(.hub(let plan)):
    status = Hub.run(plan)
case .success(.demo):
    status = await Demo.run()
case .success(.runAgent(let configuration)):
    status = await Agent.run(configuration)
case .failure(let error):
    StandardStreams.writeError("coplay: \(error.message)\nTry 'coplay --help'.")
    status = 2
}
exit(status)
