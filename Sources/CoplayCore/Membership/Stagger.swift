/// Who moves first when every agent on an item would make the same move at the same moment (the
/// end of a queue entry, a scheduled interstitial reached): the agent of smallest id at once,
/// each other one its rank of staggers later, and only if the move has not come by then (its
/// maker crashed, or its player is behind). Should two make it all the same, the moves name
/// what they replace, so they are one. Suspended participants take no turn: they may never get
/// there.
enum Stagger {
    /// How many live, unsuspended participants on `item` have an id below `id`.
    static func rank(of id: PeerID, on item: String, among peers: [PeerID: PeerRecord]) -> Int {
        peers.values.count {
            $0.liveness == .alive && $0.item == item && $0.suspensions.isEmpty && $0.member.id < id
        }
    }
}
