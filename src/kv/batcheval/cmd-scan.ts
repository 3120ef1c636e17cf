/**
 * Scan and ReverseScan: read [key, endKey) at the batch timestamp, up to
 * maxKeys rows (0: all), in ascending or descending key order; the resume
 * span says where to continue.
 * Spans: the span, read — write for a locking scan (lock 'exclusive', SELECT
 * FOR UPDATE): like a locking get (cmd-get.ts), it fails on another
 * transaction's intent at any timestamp (WriteIntentError) and on a
 * committed version above its timestamp (WriteTooOldError) within the part
 * of the span it scanned; the request path then locks every row returned
 * (unreplicated, concurrency-manager.ts).
 */
import { mvccScan, WriteIntentError, WriteTooOldError, type MvccScanResult } from '../../../storage/mvcc.js';
import { MAX_TIMESTAMP, tsLess, tsNext, type Timestamp } from '../../util/hlc.js';
import type { Reader } from '../../../storage/engine.js';
import type { KeyValue, ScanRequest } from '../api.js';
import type { EvalHeader } from './command.js';
import { registerCommand } from './command.js';
import { readOptions } from './command-util.js';

/** A locking scan's check of the newest versions over the part of the span it read. */
async function checkNewest(r: Reader, h: EvalHeader & { txn: NonNullable<EvalHeader['txn']> }, req: ScanRequest, res: MvccScanResult): Promise<void> {
  const rs = res.resumeSpan;
  const reverse = req.kind === 'reverseScan';
  const start = reverse && rs !== null && rs !== undefined ? rs.endKey : req.key;
  const end = !reverse && rs !== null && rs !== undefined ? rs.key : req.endKey;
  if (Buffer.compare(start, end) >= 0) return;
  const newest = await mvccScan(r, start, end, MAX_TIMESTAMP, { inconsistent: true, tombstones: true });
  const others = newest.intents.filter((i) => !i.txn.id.equals(h.txn.id));
  if (others.length > 0) throw new WriteIntentError(others);
  let max: { key: Buffer; ts: Timestamp } | null = null;
  for (const kv of newest.kvs) if (tsLess(h.timestamp, kv.ts) && (max === null || tsLess(max.ts, kv.ts))) max = kv;
  // A key with our own intent was written by us above any committed version: the check is about others' writes.
  if (max !== null && !newest.intents.some((i) => i.key.equals((max as { key: Buffer }).key))) throw new WriteTooOldError(max.key, h.timestamp, tsNext(max.ts));
}

for (const kind of ['scan', 'reverseScan'] as const) {
  registerCommand<ScanRequest>({
    kind,
    isWrite: false,
    declareKeys(h, req, _d, out) {
      out.push({ key: req.key, endKey: req.endKey, write: req.lock === 'exclusive' && h.txn !== undefined });
    },
    async evaluate(_ctx, r, h, req) {
      const res = await mvccScan(r, req.key, req.endKey, h.timestamp, {
        ...readOptions(h),
        reverse: kind === 'reverseScan',
        maxKeys: req.maxKeys,
      });
      if (req.lock === 'exclusive' && h.txn !== undefined) await checkNewest(r, { ...h, txn: h.txn }, req, res);
      const rows: KeyValue[] = [];
      for (const kv of res.kvs) if (kv.value !== null) rows.push({ key: kv.key, value: kv.value });
      return { kind, rows, resumeKey: res.resumeSpan?.key ?? null, resumeEndKey: res.resumeSpan?.endKey ?? null };
    },
  });
}
