/**
 * Scan and ReverseScan: read [key, endKey) at the batch timestamp, up to
 * maxKeys rows (0: all), in ascending or descending key order; the resume
 * span says where to continue.
 * Spans: the span, read.
 */
import { mvccScan } from '../../../storage/mvcc.js';
import type { KeyValue, ScanRequest } from '../api.js';
import { registerCommand } from './command.js';
import { readOptions } from './command-util.js';

for (const kind of ['scan', 'reverseScan'] as const) {
  registerCommand<ScanRequest>({
    kind,
    isWrite: false,
    declareKeys(_h, req, _d, out) {
      out.push({ key: req.key, endKey: req.endKey, write: false });
    },
    async evaluate(_ctx, r, h, req) {
      const res = await mvccScan(r, req.key, req.endKey, h.timestamp, {
        ...readOptions(h),
        reverse: kind === 'reverseScan',
        maxKeys: req.maxKeys,
      });
      const rows: KeyValue[] = [];
      for (const kv of res.kvs) if (kv.value !== null) rows.push({ key: kv.key, value: kv.value });
      return { kind, rows, resumeKey: res.resumeSpan?.key ?? null, resumeEndKey: res.resumeSpan?.endKey ?? null };
    },
  });
}
