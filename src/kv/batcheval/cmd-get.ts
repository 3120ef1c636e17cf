/**
 * Get: reads one key at the batch timestamp on the leaseholder.
 * Spans: the key, read. Conflicting intents raise WriteIntentError.
 */
import { mvccGet } from '../../../storage/mvcc.js';
import { ZERO_TIMESTAMP } from '../../util/hlc.js';
import type { GetRequest } from '../api.js';
import { registerCommand } from './command.js';
import { readOptions } from './command-util.js';

registerCommand<GetRequest>({
  kind: 'get',
  isWrite: false,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: false });
  },
  async evaluate(_ctx, r, h, req) {
    const res = await mvccGet(r, req.key, h.timestamp, readOptions(h));
    const v = res.value;
    return { kind: 'get', value: v?.value ?? null, ts: v?.ts ?? ZERO_TIMESTAMP };
  },
});
