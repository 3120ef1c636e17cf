/**
 * Get: reads one key at the batch timestamp on the leaseholder.
 * Spans: the key, read — write for a locking get (lock 'exclusive', SELECT
 * FOR UPDATE), which the lock table then queues like a writer.
 * Conflicting intents raise WriteIntentError.
 *
 * A locking get (CockroachDB's locking reads with FailOnMoreRecent) must see
 * the newest version of its key, as a write would: an intent of another
 * transaction at any timestamp raises WriteIntentError, and a committed
 * version above the read timestamp raises WriteTooOldError (the request path
 * evaluates the batch again just above it, concurrency-manager.ts
 * evaluateReads). On success it records the transaction's unreplicated lock.
 */
import { mvccGet, WriteIntentError, WriteTooOldError } from '../../../storage/mvcc.js';
import { MAX_TIMESTAMP, ZERO_TIMESTAMP, tsLess, tsNext } from '../../util/hlc.js';
import type { GetRequest } from '../api.js';
import { registerCommand } from './command.js';
import { readOptions } from './command-util.js';

registerCommand<GetRequest>({
  kind: 'get',
  isWrite: false,
  declareKeys(h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: req.lock === 'exclusive' && h.txn !== undefined });
  },
  async evaluate(_ctx, r, h, req) {
    const res = await mvccGet(r, req.key, h.timestamp, readOptions(h));
    if (req.lock === 'exclusive' && h.txn !== undefined) {
      // Newest version, whoever wrote it: an intent of another transaction, or a committed value above us.
      const newest = await mvccGet(r, req.key, MAX_TIMESTAMP, { inconsistent: true, tombstones: true });
      if (newest.intent !== null && !newest.intent.txn.id.equals(h.txn.id)) throw new WriteIntentError([newest.intent]);
      const v = newest.value;
      if (newest.intent === null && v !== null && tsLess(h.timestamp, v.ts)) throw new WriteTooOldError(req.key, h.timestamp, tsNext(v.ts));
    }
    const v = res.value;
    return { kind: 'get', value: v?.value ?? null, ts: v?.ts ?? ZERO_TIMESTAMP };
  },
});
