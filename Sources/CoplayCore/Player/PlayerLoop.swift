/// The loop between an instance and its player, the one the shell and the simulation both run.
///
/// A directive list is carried out with its datagrams first, encoded (and signed) by the
/// instance: their clock readings (a probe's origin, a reply's transmit time) were taken when the
/// input arrived, and a line written to standard output can wake its reader, which may take the
/// CPU before the datagram behind it is sent (among 64 agents started together, a sixth of the
/// first probes' round trips measured such a wait, milliseconds long). Then the player's
/// commands, performed on the player in order; then everything else, handed to `carry` in order.
/// What the player reported goes back to the instance, one report at a time, and each answer is
/// carried out the same way.
public enum PlayerLoop {
    /// A player the loop hands the core's commands to: the simulated one, mpv, a delegating
    /// socket (a shell's own player refines this with its timers and its connection).
    public protocol Player {
        /// Carries out `command`; what it reports at once (ready, a failure, …).
        mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport]
    }

    /// A directive for the host to carry out (everything but the player's commands and the exit).
    public enum Step {
        /// Send these bytes to the session's group (`to` nil) or to an endpoint; `expedited`: in
        /// the faster class of service (`Payload.isTimeCritical`, `Settings.expeditedTrafficClass`).
        case datagram([UInt8], to: Endpoint?, expedited: Bool)
        /// Publish this frame on the relay's subject (`--relay`; a shell without one gets none).
        case publish([UInt8], subject: String)
        /// Subscribe the relay to the instance's `relaySubscriptions`, and keep it alive by its
        /// `settings.relay`, from now on (a viewer took a seat on the stage). Carried in order among
        /// the datagrams: what is published after it may be answered on the new subject.
        case subscribe
        case emit(Event)
        case diagnose(String)
        case wake(at: MonotonicInstant)
    }

    /// How a loop ended.
    public struct Outcome: Sendable {
        /// Some directive said to exit, with this status: nothing after it was carried out.
        public var exitStatus: Int32?
        /// The player was handed a command or its reports were fed back: its next event may have
        /// moved (ask it again).
        public var playerTouched = false

        public init(exitStatus: Int32? = nil, playerTouched: Bool = false) {
            self.exitStatus = exitStatus
            self.playerTouched = playerTouched
        }
    }

    /// Carries out `directives` (see `PlayerLoop`).
    public static func carryOut<Player: PlayerLoop.Player>(
        _ directives: [Directive], instance: inout Instance, player: inout Player, now: () -> Timestamp,
        carry: (Step) -> Void
    ) -> Outcome {
        // One reading of the clock stamps the list's datagrams (`Datagram.sentAt`).
        var sentAt: Timestamp?
        // A datagram to the group goes on the LAN and the relay's group subject; one to a relay
        // endpoint only to that peer's subject.
        func send(_ datagram: Datagram, to endpoint: Endpoint?) {
            let at = sentAt ?? now()
            sentAt = at
            let bytes = instance.encode(datagram, at: at)
            if endpoint == .lanGroup {
                return carry(.datagram(bytes, to: nil, expedited: datagram.payload.isTimeCritical))
            }
            if endpoint?.isRelay != true {
                carry(.datagram(bytes, to: endpoint, expedited: datagram.payload.isTimeCritical))
            }
            if let (subject, frame) = instance.relayFrame(bytes, to: endpoint, type: datagram.payload.type) {
                carry(.publish(frame, subject: subject))
            }
        }
        for directive in directives {
            switch directive {
            case .multicast(let datagram): send(datagram, to: nil)
            case .unicast(let datagram, let endpoint): send(datagram, to: endpoint)
            case .resubscribe: carry(.subscribe)
            case .player, .emit, .diagnose, .wake, .exit: continue
            }
        }
        var reports: [PlayerReport] = []
        var outcome = Outcome()
        // Then the player's commands (those before an exit): what the person sees waits for no
        // line a script reads, for the same reason.
        for directive in directives {
            if case .exit = directive { break }
            guard case .player(let command) = directive else { continue }
            outcome.playerTouched = true
            reports += player.perform(command, now: now())
        }
        for directive in directives {
            switch directive {
            case .multicast, .unicast, .resubscribe, .player: continue
            case .emit(let event): carry(.emit(event))
            case .diagnose(let text): carry(.diagnose(text))
            case .wake(let instant): carry(.wake(at: instant))
            case .exit(let status):
                outcome.exitStatus = status
                return outcome
            }
        }
        guard outcome.playerTouched else { return outcome }
        outcome.exitStatus = feed(reports, instance: &instance, player: &player, now: now, carry: carry)
        return outcome
    }

    /// Hands what the player reported (to a command, when its timer fired, on its connection)
    /// back to the instance, one report at a time, and carries out each answer. Returns the exit
    /// status if one said to exit.
    public static func feed<Player: PlayerLoop.Player>(
        _ reports: [PlayerReport], instance: inout Instance, player: inout Player, now: () -> Timestamp,
        carry: (Step) -> Void
    ) -> Int32? {
        for report in reports {
            let answer = instance.onPlayerReport(report, now: now())
            let outcome = carryOut(answer, instance: &instance, player: &player, now: now, carry: carry)
            if let status = outcome.exitStatus { return status }
        }
        return nil
    }
}

extension Instance {
    /// One thing for a shell to do, carried out as is: what `PlayerLoop` carries, for a shell that
    /// does not hand its player's reports back at once (a page whose player answers later).
    public enum Output: Sendable {
        /// Encoded, stamped and signed: send to the group's address (nil) or to the endpoint;
        /// `expedited` in the faster class of service, where the shell's network has one.
        case datagram([UInt8], to: Endpoint?, expedited: Bool)
        /// Sealed: publish on the relay's subject.
        case publish([UInt8], subject: String)
        /// Subscribe the relay to `relaySubscriptions`, with `settings.relay` (`PlayerLoop.Step.subscribe`).
        case subscribe
        /// For the player; what it reports comes back through `onPlayerReport`.
        case player(PlayerCommand)
        case emit(Event)
        case diagnose(String)
        /// Set the one timer to this monotonic instant (replacing the last).
        case wake(MonotonicInstant)
        /// Flush and exit with this status.
        case exit(Int32)
    }

    /// The directives as outputs, in `PlayerLoop`'s order (the datagrams first, at one reading of
    /// the clock, then the player's commands, then the rest): nothing is left for the shell to
    /// encode, sign or seal.
    public mutating func outputs(_ directives: [Directive], now: Timestamp) -> [Output] {
        struct Recorder: PlayerLoop.Player {
            var commands: [PlayerCommand] = []
            mutating func perform(_ command: PlayerCommand, now: Timestamp) -> [PlayerReport] {
                commands.append(command)
                return []
            }
        }
        var recorder = Recorder()
        var steps: [Output] = []
        let outcome = PlayerLoop.carryOut(
            directives, instance: &self, player: &recorder, now: { now },
            carry: { step in
                switch step {
                case .datagram(let bytes, let to, let expedited):
                    steps.append(.datagram(bytes, to: to, expedited: expedited))
                case .publish(let frame, let subject): steps.append(.publish(frame, subject: subject))
                case .subscribe: steps.append(.subscribe)
                case .emit(let event): steps.append(.emit(event))
                case .diagnose(let text): steps.append(.diagnose(text))
                case .wake(let at): steps.append(.wake(at))
                }
            })
        // The player's commands go after the datagrams, as PlayerLoop performs them.
        let sent = steps.prefix {
            switch $0 {
            case .datagram, .publish, .subscribe: true
            default: false
            }
        }
        var out = Array(sent) + recorder.commands.map { Output.player($0) } + steps.dropFirst(sent.count)
        if let status = outcome.exitStatus { out.append(.exit(status)) }
        return out
    }
}
