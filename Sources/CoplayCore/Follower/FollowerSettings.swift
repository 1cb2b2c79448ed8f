/// How a player follows the group's timeline (`PlayerFollower`): every timing of the mpv and the
/// `<video>` adapters lives here, with the reason for it, so that the two follow the same rules.
public struct FollowerSettings: Hashable, Sendable {
    /// A player held within this of a position counts as there: a start unpauses it without a
    /// seek, and a pause snaps it only from further away (a frame is 17-42 ms; mpv's paused
    /// position reads to the microsecond).
    public var heldWithin = 0.002
    /// A `play` that finds the player already playing within this of the new timeline makes it
    /// seek no more: the rate nudges close the rest (about 4 s at 0.5%, far less at the catch-up
    /// rate), rather than an audible jump.
    public var playWithoutSeekWithin: Duration = .milliseconds(20)
    /// How often a playing player is asked for its position: each answer is a sample the drift
    /// correction steers by (10 per second: a 0.5% nudge moves 0.5 ms between samples).
    public var sampleInterval: Duration = .milliseconds(100)
    /// A position asked for and not answered within this is given up (a sample is asked again):
    /// a player that drops an answer must not stop the steering.
    public var sampleAnswerPatience: Duration = .seconds(1)
    /// How long after an unpause (or a seek done while playing) the player is first read: mpv's
    /// audio clock jumps in its first tens of milliseconds (the audio output starting, the codec's
    /// priming skipped), and read inside them, as at 30 ms, the start bias learnt from it differed
    /// from one player to the next.
    public var firstSampleDelay: Duration = .milliseconds(60)
    /// The start bias (how far ahead of its timeline the player's clock is just after an unpause)
    /// learnt from one start moves by this share of the error found; it stays within
    /// ±`startBiasMax`, and a first reading further off than that teaches nothing (a disturbance).
    public var startBiasGain = 0.5
    public var startBiasMax = 0.25
    /// A start after a seek in the item found this far ahead by its first reading holds still for
    /// as long, and one found this far behind plays at the catch-up rate until even: smaller
    /// errors are the rate nudges' to close (5 ms: where they turn to catching up).
    public var startCorrectedFrom = 0.005
    /// A catch-up ended by its readings (a player with a dead band, whose clock is set back as its
    /// rate leaves 1) ends at the first reading within this of the timeline (a reading's own
    /// jitter is about a millisecond), and at the latest twice its time after it began, plus this
    /// slack (a player that does not follow the rate must not be left catching up).
    public var catchUpEvenWithin = 0.001
    public var catchUpSlack: Duration = .milliseconds(500)
    /// A seek's cost (from the command to the player's restart) is learnt as a moving average
    /// that keeps this share of the last value; it starts at `seekCostInitial`.
    public var seekCostKeep = 0.8
    public var seekCostInitial = 0.03
    /// A seek taking longer than this is not learnt from (a reload, a fetch from far away).
    public var seekCostLearnedMax = 2.0
    /// A player whose rate does not steer (some WebKit builds play every rate at 1) steers by
    /// skips alone: a seek once its error passes `skipBeyond`, then none for `skipQuiet` (a
    /// seek's own time must not start the next one: no seek loop).
    public var skipBeyond: Duration = .milliseconds(40)
    public var skipQuiet: Duration = .seconds(3)
    /// A start (a skip, a join) that lands later than this on a player steered by skips is
    /// skipped again at once, once (the rate cannot make it up, and a landing inside
    /// `skipBeyond` would stay), aimed `reskipAimEarly` (seconds) early so that holding still
    /// trims what is left. 3 ms: at 15 WebKit's landings 8 and 13 ms late stayed for good (media
    /// p50 7.9 ms in CI, target 3), and at 5 one 5.6 ms late did. The second seek comes just
    /// after the start's own, where a glitch is least seen, and never a third.
    public var reskipFrom = 0.003
    public var reskipAimEarly = 0.010
    /// An error past `skipSettledFrom` that every reading has kept, on one side, for this long
    /// is skipped too (still no more often than `skipQuiet`): Chromium forced to skips settled
    /// 31 ms behind a second after a start whose first reading was on time, and stayed there.
    /// 15 ms: a skip in the middle of the film is seen, and less is not worth it.
    public var skipSettledFrom = 0.015
    public var skipSettled: Duration = .seconds(1)
    /// A start on a player steered by skips is judged (a skip again, a hold, the bias learnt) at
    /// the first reading that has run at the rate since the one before it, within this (within
    /// `readingStepMax` where readings move in steps), not at the first reading: Chromium's first
    /// readings after a seek run up to 20 ms ahead of its media and then stand still while it
    /// catches up, so a skip again or a hold taken on them landed 20-35 ms behind and stayed
    /// there for `skipQuiet`. At most `startReadingsMax` readings are waited for (a player that
    /// never runs evenly is judged at the last).
    public var startSettledWithin = 0.002
    public var startReadingsMax = 4
    /// Until a start is judged, a player whose clock may stand after a start
    /// (`standsAfterStart`) or that is steered by skips is read this often: at 100 ms the
    /// judgment of a phone's join waited 300 ms for Chromium's clock to run evenly, at 30 ms it
    /// waits 90 (four readings span what its clock stood).
    public var startReadingInterval: Duration = .milliseconds(30)
    /// Whether the rate steers is checked over windows of this length in which the rates asked
    /// were on average at least `rateCheckAskedMin` from the group's: the media's own slope must
    /// move half as far, or `rateCheckMovedMin`, whichever is less (a player that does not steer
    /// moves not at all; one that steers badly still steers). `rateCheckMisses` windows in a row
    /// that miss switch to skips.
    public var rateCheckWindow: Duration = .seconds(1)
    public var rateCheckAskedMin = 0.01
    public var rateCheckMovedMin = 0.005
    public var rateCheckMisses = 3
    /// A player that plays rates near 1 as 1 (`PlayerFollower.Capabilities.rateDeadBand`) is
    /// given a rate inside twice its band by alternating either side of the band, for the same
    /// mean, over this period.
    public var rateDitherPeriod: Duration = .milliseconds(200)
    /// A player the platform paused on its own (a browser pausing a hidden page's video) is asked
    /// to play again this often while it should be playing and can be seen.
    public var playRetryInterval: Duration = .seconds(1)
    /// A seek not done within this is answered by reloading the media at its position (for a
    /// player that declares it can: a browser's media pipeline, suspended, may never finish one).
    public var seekPatience: Duration = .seconds(2)
    /// A seek the player refused while preparing is asked once more this much later before the
    /// player is said to fail: mpv also refuses one for a moment while it is still opening a
    /// network stream (a joiner's seek to 0.0 s in the film a party serves, whose server takes
    /// byte ranges, was refused once in some four runs of the fast tier, both cores busy). A
    /// constant, not a field: a field of these settings cost the browser's module 0.8 KB gzipped.
    public static let seekRefusalRetry: Duration = .milliseconds(300)
    /// A pause or a rate the follower asked stays its own (`Echoes`) until a newer ask has been
    /// answered this long ago: a player's report of its own change comes after its answer to the
    /// change, within milliseconds on a quiet machine, but an mpv stopped between the two (for up
    /// to 600 ms in `coplay-bench hiccup`, and longer behind a slow disk) sends it only once it
    /// runs again. The last ask's echo, due after an older one's, is given up this long after its
    /// answer, and the value asked again. At most `echoesMax` asks of each property are kept (a
    /// table the player's reports cannot grow): a start asks at most three changes of each (pause,
    /// seek, unpause; a rate, a catch-up, its end), and a player stopped for a second while the
    /// follower holds and unpauses it every 70 ms (`MpvEchoTests`) gets some 30; past the bound, an
    /// unexplained report counts as an echo until the window is clear again.
    public static let echoGrace: Duration = .seconds(2)
    public static let echoesMax = 32

    /// A player whose readings move in steps (`PlayerFollower.Capabilities.readsInSteps`:
    /// Firefox's `currentTime` moves every 40 ms or so, read every 100 ms) is taken to be where
    /// the highest of its readings of the last `steppedReadingsSpan`, each carried forward at the
    /// rate asked, puts it: each reading is where it was up to a step before it was read, and
    /// over 300 ms the readings' phases against the steps spread enough for one to be fresh. A
    /// reading more than `readingStepMax` below that is no stale reading but the media falling
    /// behind (a hiccup): the readings begin again from it, as they do once `steppedReadingsMax`
    /// are kept (the span holds 4 at one reading every 100 ms; a player whose readings all carry
    /// one instant must not grow the table).
    public var steppedReadingsSpan: Duration = .milliseconds(350)
    public var readingStepMax = 0.05
    public var steppedReadingsMax = 8

    public init() {}
}
