/// What the core asks of the local player (`Directive.player`). The core decides; a player
/// implementation outside the protocol machines (simulated, mpv, a delegating socket) carries it
/// out and reports back with `PlayerReport`s (`Instance.onPlayerReport`). Modelled on
/// AVDelegatingPlaybackCoordinator: the coordinator says where to be and when, the player says
/// when it is ready and what the person in front of it did.
public enum PlayerCommand: Hashable, Sendable {
    /// Load `item` and prepare it paused at `position`; report `.ready` once it can play.
    case load(LoadedItem, position: Double)
    /// Seek to `position` and hold there paused; report `.ready` once it can play.
    case prepare(position: Double)
    /// Play at `rate` so that the media is at `position` at wall instant `at` (an instant in the
    /// past: continue from where it would be by now).
    case play(rate: Double, position: Double, at: WallInstant)
    /// Keep playing from where it is at wall instant `at`, at `rate`, without a seek: the small
    /// correction that steers a player back onto the group's timeline (a rate nudge).
    case adjustRate(Double, at: WallInstant)
    /// Pause, showing `position`.
    case pause(position: Double)
    /// Stop and unload the current item: nothing is loaded afterwards.
    case unload
    /// Testing: behave as if the media stopped arriving for `seconds` (report `.stalled`, later
    /// `.stallEnded`). Players that cannot simulate a stall ignore it.
    case simulateStall(seconds: Double)
    /// Play `interstitial` in a second player, in front of the main one (which holds where it is
    /// told), until `endInterstitial`; the core times it (its `durationSeconds`).
    case interstitial(Interstitial)
    /// Stop the interstitial and show the main player again.
    case endInterstitial
}

/// What the local player tells the core.
public enum PlayerReport: Hashable, Sendable {
    /// Prepared at `position` after a load or a prepare: it can play.
    case ready(position: Double)
    /// It stopped for want of media (buffer underrun) at `position`.
    case stalled(position: Double)
    /// The stall is over; it holds `position` paused.
    case stallEnded(position: Double)
    /// It reached the end of the item and holds there.
    case ended(position: Double)
    /// Where it was at wall instant `at`, moving at `rate`: the core compares this with the group's
    /// timeline and corrects (rate nudges for small errors, a seek for large ones). A player that
    /// sends samples is steered by them; one that sends none is trusted to follow its commands.
    case sample(position: Double, rate: Double, at: WallInstant)
    /// The current item is live: the program dates its playlist still lists, reported on load and
    /// after each reading of the playlist; positions are then program dates. A start or a rejoin
    /// lands inside the window, near its edge (`LiveTimeline.clamp`).
    case liveWindow(LiveWindow)
    /// The person in front of the player did this (a key, an on-screen control): a group command.
    case userAction(UserAction)
    /// The player failed (it quit, an error not about its item); the text says how.
    case failed(String)
    /// The player could not load the item it was given (a wrong URL, a format it cannot
    /// play); the text says how, `problem` which kind of failure it is. The agent leaves the
    /// item rather than wait for a readiness that will never come, and the group is told why
    /// (`PlaybackProblem`).
    case loadFailed(String, problem: PlaybackProblem = .other)
    /// The interstitial could not be played (the second player failed); the text says how.
    case interstitialFailed(String)
    /// The item's length, as the player found it once loaded (a file's duration): an item shared
    /// without `duration=` takes it here, so that positions past its end are clamped to it (a
    /// live item ignores it).
    case duration(Double)
    /// The player now has what it lacked for the group's item, which it could not load (a copy
    /// of its own, picked or found since: `cannotPlay:noCopy`): the item is loaded again here,
    /// where the group is. Nothing happens when the player has an item or the group has none.
    case copyFound
    /// The player plays another encode of the current item, which its person accepted (the same
    /// film by its name and length, other bytes): announced as `copy:anotherEncode` until another
    /// item is loaded, so that every participant sees whose copy differs. Ignored with no item.
    case anotherEncode

    /// A transport action taken in the player itself.
    public enum UserAction: Hashable, Sendable {
        case play(rate: Double)
        case pause
        case seek(position: Double)
        /// The playlist keys: the whole group moves to the queue's next (previous) entry.
        case next
        case previous
    }
}

extension PlayerReport.UserAction {
    /// The action as the command a person would type for it.
    var command: ConsoleCommand {
        switch self {
        case .play(let rate): .play(rate: rate)
        case .pause: .pause
        case .seek(let position): .seek(seconds: position)
        case .next: .next
        case .previous: .previous
        }
    }
}
