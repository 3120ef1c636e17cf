/**
 * Refresh / RefreshRange: may a transaction move its read timestamp from
 * `refreshFrom` up to the batch timestamp without changing what it read?
 * Fails (RefreshFailedError, retryable) on a committed version (or
 * tombstone) in (refreshFrom, ts] or another transaction's intent at or
 * below ts; the transaction's own intents do not count.
 * Spans: the key / span, read (so the refreshed reads enter the timestamp cache).
 */
import { tsLess, tsLessEq, type Timestamp } from '../../util/hlc.js';
import { mvccGet, mvccScan, type Intent, type MvccKeyValue } from '../../../storage/mvcc.js';
import type { RefreshRangeRequest, RefreshRequest } from '../txn-api.js';
import { RefreshFailedError } from '../txn-api.js';
import type { EvalHeader } from './command.js';
import { registerCommand } from './command.js';

function check(h: EvalHeader, from: Timestamp, kvs: readonly (MvccKeyValue | null)[], intents: readonly (Intent | null)[]): void {
  for (const kv of kvs) if (kv !== null && tsLess(from, kv.ts)) throw new RefreshFailedError(kv.key, kv.ts, false);
  for (const it of intents) {
    if (it === null || (h.txn !== undefined && it.txn.id.equals(h.txn.id))) continue;
    if (tsLessEq(it.txn.writeTimestamp, h.timestamp)) throw new RefreshFailedError(it.key, it.txn.writeTimestamp, true);
  }
}

registerCommand<RefreshRequest>({
  kind: 'refresh',
  isWrite: false,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: false });
  },
  async evaluate(_ctx, r, h, req) {
    const res = await mvccGet(r, req.key, h.timestamp, { inconsistent: true, tombstones: true });
    check(h, req.refreshFrom, [res.value], [res.intent]);
    return { kind: 'refresh', found: 0 };
  },
});

registerCommand<RefreshRangeRequest>({
  kind: 'refreshRange',
  isWrite: false,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: req.endKey, write: false });
  },
  async evaluate(_ctx, r, h, req) {
    const res = await mvccScan(r, req.key, req.endKey, h.timestamp, { inconsistent: true, tombstones: true });
    check(h, req.refreshFrom, res.kvs, res.intents);
    return { kind: 'refreshRange', found: 0 };
  },
});
