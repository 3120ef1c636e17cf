/**
 * Deliberately broken Raft variants, planted through the simulation's test
 * hooks (SimHooks) without touching the library: the fault simulation must
 * catch every one of them, which proves its checker can fail.
 *
 *   commit-by-counting  A leader commits an entry of an earlier term as soon
 *                       as a majority stores it — the error Raft §5.4.2 and
 *                       Figure 8 warn about (the entry can still be
 *                       overwritten by a leader that never had it).
 *   forget-vote         The vote is not persisted with the term: a node that
 *                       crashes and restarts may vote twice in one term.
 *   vote-ignores-log    Votes are granted without the §5.4.1 up-to-date check.
 *   forge-vote          The network turns every vote refusal into a grant.
 *   send-before-persist A Ready's messages (votes, append acknowledgements)
 *                       leave before its write, so a crash in between loses
 *                       state that others already counted on.
 */
import { MessageType, type Message } from '../types.js';
import type { SimHooks } from './sim-cluster.js';

export type PlantedFault = 'none' | 'commit-by-counting' | 'forget-vote' | 'vote-ignores-log' | 'forge-vote' | 'send-before-persist';

export const PLANTED_FAULTS: readonly PlantedFault[] = ['commit-by-counting', 'forget-vote', 'vote-ignores-log', 'forge-vote', 'send-before-persist'];

export function faultHooks(f: PlantedFault): SimHooks {
  switch (f) {
    case 'none':
      return {};
    case 'commit-by-counting':
      return {
        onRawNode(rn) {
          const r = rn.raft;
          r.maybeCommit = () => {
            const mi = r.trk.committed();
            if (mi <= r.raftLog.committed) return false;
            r.raftLog.commitTo(mi);
            return true;
          };
        },
      };
    case 'forget-vote':
      return { persistHardState: (_n, hs) => (hs === null ? null : { term: hs.term, vote: 0, commit: hs.commit }) };
    case 'vote-ignores-log':
      return {
        onRawNode(rn) {
          rn.raft.raftLog.isUpToDate = () => true;
        },
      };
    case 'send-before-persist':
      return { sendBeforePersist: true };
    case 'forge-vote':
      return {
        onSend(m: Message): Message {
          if ((m.type === MessageType.MsgVoteResp || m.type === MessageType.MsgPreVoteResp) && m.reject) return { ...m, reject: false };
          return m;
        },
      };
  }
}
