/**
 * GC: MVCC garbage collection of some of the range's keys at a threshold,
 * and the range's GC threshold raised to it (CockroachDB's GCRequest,
 * reduced; api.ts GCRequest). Sent by the GC queue (gc-queue.ts) to its own
 * replica, evaluated on the leaseholder under latches and replicated through
 * Raft like any write, so every replica removes exactly the same versions.
 *
 * What goes, per key (storage/mvcc.ts planGc): every version at or below the
 * threshold that a newer version at or below it shadows, and the newest one
 * at or below it when it is a tombstone. Never an intent, never a version
 * above the threshold: a read above the threshold sees the same before and
 * after. The stats delta is exact (mvccGarbageCollect adds it).
 *
 * The threshold (replicated range-ID-local, keys.ts rangeGCThresholdKey,
 * value = a timestamp, api-codec.ts encodeTimestamp) only rises: a request
 * below the current one collects at its own (lower) threshold and leaves the
 * stored one. Every replica adopts it on apply (the side effect); from then
 * on the replica refuses reads and writes at or below it
 * (BatchTimestampBeforeGCError, Replica.checkGCThreshold).
 *
 * Why readers are safe:
 *   - a reader above the threshold needs nothing GC removes (above);
 *   - a reader at or below the new threshold either holds its latches
 *     before the GC takes its own — the GC write-latches every key it
 *     removes versions of, so it waits for that reader (latches are not
 *     MVCC-aware: they serialize whatever the timestamps) — or takes them
 *     after the GC applied, and then meets the raised threshold in its
 *     check after latching;
 *   - the leaseholder refuses a threshold not strictly below the batch's
 *     timestamp (its clock): a threshold in the future would refuse every
 *     present write. The GC queue picks now − TTL.
 * Spans: each key, write; the GC threshold key, write.
 */
import { CairnError } from '../../util/errors.js';
import { formatTimestamp, tsLess, tsLessEq } from '../../util/hlc.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { rangeGCThresholdKey } from '../../../storage/keys.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { mvccGarbageCollect } from '../../../storage/mvcc.js';
import { encodeTimestamp } from '../api-codec.js';
import type { GCRequest } from '../api.js';
import { registerCommand } from './command.js';

registerCommand<GCRequest>({
  kind: 'gc',
  isWrite: true,
  declareKeys(h, req, _d, out) {
    for (const k of req.keys) out.push({ key: k, endKey: null, write: true });
    out.push({ key: rangeGCThresholdKey(h.rangeId), endKey: null, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    if (!tsLess(req.threshold, h.timestamp)) {
      throw new CairnError('kv.invalid_gc_threshold', `kv: GC threshold ${formatTimestamp(req.threshold)} of r${ctx.rangeId} is not below the batch timestamp ${formatTimestamp(h.timestamp)}`);
    }
    for (const k of req.keys) {
      if (compareBytes(k, req.key) < 0 || compareBytes(k, req.endKey) >= 0) throw new CairnError('kv.invalid_gc_request', `kv: GC key ${k.toString('hex')} outside the request's span`);
    }
    await mvccGarbageCollect(rw, req.keys, req.threshold, ctx.stats);
    if (!tsLessEq(req.threshold, ctx.gcThreshold)) {
      rw.put(encodeMvccKey(rangeGCThresholdKey(ctx.rangeId)), encodeTimestamp(req.threshold));
      ctx.sideEffects.gcThreshold = req.threshold;
    }
    return { kind: 'gc' };
  },
});
