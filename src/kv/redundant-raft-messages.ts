/**
 * Raft messages of one Ready that a later message of the same Ready makes
 * redundant, which the store leaves out of the batch it sends (Store.route).
 *
 * Under load a leader's Ready often holds two appends to the same follower:
 * the empty MsgApp that broadcast a commit index when acknowledgements
 * arrived (stepped between rounds: Raft's bcastAppend after maybeCommit), and
 * the MsgApp carrying the commands proposed since (the proposal buffer's flush
 * at the start of the round). The follower answers each, so one range costs
 * four messages per follower per round where two say the same. With the load
 * split over several ranges each range's rounds carry fewer commands, and
 * these pairs are most of the Raft messages per write (session 6: 3.06 per put
 * with 6 ranges against 0.59 with one).
 *
 * Left out (each only when the later message is in the same list, so it
 * travels in the same batch, behind it):
 *
 *   - an EMPTY MsgApp (no entries, no snapshot) followed by a MsgApp to the
 *     same replica with the same term, the same (index, logTerm) — hence the
 *     same log-matching check at the follower (Raft §5.3), accepted or
 *     rejected alike — and a commit at least as high. Accepted, the later one
 *     appends and then commits min(commit, its last new index) ≥ what the
 *     empty one would have committed (min(commit, index)); rejected, the
 *     empty one would have been rejected with the same hint.
 *   - an accepting MsgAppResp (reject false) followed by an accepting
 *     MsgAppResp to the same replica with the same term and an index at least
 *     as high: the leader's handling of the later one (Progress.maybeUpdate,
 *     the probe → replicate step, freeing in-flight appends ≤ index, the
 *     commit check) covers everything the earlier one would do. Rejections are
 *     always sent.
 *
 * Leaving a message out is what the network may do anyway (Raft tolerates
 * loss); these rules only drop messages whose whole effect the kept one has.
 * Everything else keeps its order.
 *
 * Hot path: called per message; looks ahead only from an empty MsgApp or an
 * accepting MsgAppResp, over the few messages one replica's Ready holds.
 *
 * Deferred commit-only appends (Store, settings.deferCommitOnlyAppends): a
 * leader's empty MsgApps leave after its round's sync instead of before it,
 * and one is left out when an append with entries to the same replica in the
 * same term, at or past its index and with a commit at least as high, was
 * sent in the same round (before the sync or during it) or follows it in the
 * post-sync batch (isEmptyAppendSuperseded). Accepted, that append commits
 * min(commit, its last index) ≥ min(commit, index) of the empty one and is
 * acknowledged at a higher index; rejected (the follower's log does not reach
 * its position), the empty one is lost as the network may lose it — the
 * leader probes from the rejection and the commit reaches the follower with
 * the next append or heartbeat.
 */
import { MessageType, type Message } from '../../raft/types.js';

/** Whether msgs[i] is made redundant by a later message of msgs (see the header). */
export function isSupersededInReady(msgs: readonly Message[], i: number): boolean {
  const m = msgs[i] as Message;
  if (m.type === MessageType.MsgApp) {
    if (m.entries.length > 0 || m.snapshot !== null) return false;
    for (let j = i + 1; j < msgs.length; j++) {
      const n = msgs[j] as Message;
      if (n.type === MessageType.MsgApp && n.to === m.to && n.term === m.term && n.index === m.index && n.logTerm === m.logTerm && n.commit >= m.commit) return true;
    }
    return false;
  }
  if (m.type === MessageType.MsgAppResp) {
    if (m.reject) return false;
    for (let j = i + 1; j < msgs.length; j++) {
      const n = msgs[j] as Message;
      if (n.type === MessageType.MsgAppResp && n.to === m.to && n.term === m.term && !n.reject && n.index >= m.index) return true;
    }
  }
  return false;
}

/**
 * Whether the empty MsgApp `m` is made redundant by the MsgApp `n` to the
 * same replica (sent before it or after it in the same round): same term, n
 * at or past m's log position, a commit at least as high (see the header,
 * "Deferred commit-only appends").
 */
export function isEmptyAppendSuperseded(m: Message, n: Message): boolean {
  return (
    m.type === MessageType.MsgApp &&
    m.entries.length === 0 &&
    m.snapshot === null &&
    n.type === MessageType.MsgApp &&
    n.snapshot === null &&
    n.to === m.to &&
    n.term === m.term &&
    n.index >= m.index &&
    n.commit >= m.commit
  );
}
