/**
 * The split queue (CockroachDB's split_queue.go): on each store, a range
 * whose lease it holds and whose MVCC bytes exceed splitMaxRangeBytes is split
 * at the key halfway through its bytes (split.ts adminSplit). The same scan
 * repairs meta2 (split.ts fixMeta2) for every range whose lease it holds —
 * which is what completes a split whose driver died between the split and the
 * meta2 write (see split.ts), deterministically after a restart.
 *
 * Cost: a range needing no split costs no KV round trip. Its size comes from
 * the replica's MVCC stats; meta2 is checked once per descriptor generation
 * this store sees (a split, merge or replica change bumps the generation; a
 * restart or a lease arriving from another store starts with nothing
 * checked) and again after META2_RECHECK_MS (5 min, a backstop), not on every
 * scan — which rewrote/scanned meta2 for every
 * leased range every second (issue 8: ~690 meta2 scans in a YCSB run).
 *
 * Ownership: one per store; the owner drives it (ReplicaQueue.tick/runOnce).
 */
import { META2_MAX, isValidSplitKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { encodeMvccKey, mvccKeyPrefixLen, mvccUserKey } from '../../storage/mvcc-key.js';
import type { Sender } from './kv-client.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import type { Replica } from './replica.js';
import { adminSplit, fixMeta2 } from './split.js';
import type { Store } from './store.js';

export function rangeBytes(r: Replica): number {
  const s = r.applied.stats;
  return s.keyBytes + s.valBytes;
}

/** The first user key at which the range's data passes half its bytes (null: none valid). */
export async function findSplitKey(r: Replica, store: Store): Promise<Buffer | null> {
  const d = r.desc;
  const start = compareBytes(d.startKey, META2_MAX) < 0 ? META2_MAX : d.startKey;
  const half = rangeBytes(r) / 2;
  const it = store.engine.iterator({ gte: encodeMvccKey(start), lt: encodeMvccKey(d.endKey) });
  let seen = 0;
  try {
    for (;;) {
      const rows = await it.nextBatch(512);
      if (rows.length === 0) return null;
      for (const { key, value } of rows) {
        seen += key.length + value.length;
        if (seen < half) continue;
        const plen = mvccKeyPrefixLen(key);
        const user = Buffer.from(mvccUserKey(key, plen));
        if (compareBytes(user, d.startKey) > 0 && isValidSplitKey(user) && compareBytes(user, META2_MAX) >= 0) return user;
      }
    }
  } finally {
    await it.close();
  }
}

/**
 * A checked meta2 record is checked again after this long (store clock) even
 * if its generation did not change: a backstop. A stale record that a
 * lagging repair writes after a merge was checked — it can name a range merged
 * away (issue 4: r213 at the end of test/kv-ranges-multiproc/split-merge) — is
 * swept by the writer itself, whose write is followed by a scan (split.ts
 * "Stale records"), or by the live range's own later write. Was 60 s: in a 6.5-min
 * run of test/kv-ranges-multiproc/split-merge (200 ranges) the split queues
 * made 1,262 meta2 checks — a scan and a get on r1 each, about two thirds of
 * r1's meta2 traffic, competing with the split drivers' own fixes (p50 245 ms,
 * p90 1.6 s, max 17.8 s per check at load average ~45).
 */
export const META2_RECHECK_MS = 300_000;

export function newSplitQueue(store: () => Store | null, db: Sender, settings: RangeQueueSettings): ReplicaQueue {
  /** Per store: rangeId → the descriptor generation whose meta2 record it last checked, and when (µs, store clock). */
  const checked = new WeakMap<Store, Map<number, { generation: number; atMicros: number }>>();
  const isChecked = (s: Store, r: Replica): boolean => {
    const c = checked.get(s)?.get(r.rangeId);
    return c !== undefined && c.generation === r.desc.generation && s.clock.now().wall - c.atMicros < META2_RECHECK_MS * 1000;
  };
  return new ReplicaQueue(
    store,
    {
      name: 'split',
      shouldQueue(r) {
        // The leader acts for a quiescent range whose lease lapsed (the split re-acquires it).
        if (!r.ownsValidLease() && !r.isLeader()) return 0;
        const over = rangeBytes(r) / settings.splitMaxRangeBytes;
        if (over > 1) return over;
        const s = store();
        return s !== null && isChecked(s, r) ? 0 : 0.5; // 0.5: only the meta2 check
      },
      async process(r) {
        const s = store();
        if (s === null) return;
        if (!isChecked(s, r)) {
          const desc = r.desc;
          const atMicros = s.clock.now().wall;
          await fixMeta2(db, desc);
          let m = checked.get(s);
          if (m === undefined) checked.set(s, (m = new Map()));
          m.set(r.rangeId, { generation: desc.generation, atMicros });
        }
        if (rangeBytes(r) <= settings.splitMaxRangeBytes) return;
        const key = await findSplitKey(r, s);
        if (key !== null) await adminSplit(db, key);
      },
    },
    settings.queueIntervalTicks,
  );
}
