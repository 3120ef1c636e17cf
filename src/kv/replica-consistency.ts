/**
 * The per-replica consistency checksum (CockroachDB's ComputeChecksum): an
 * xxhash64 over every engine key and value of the range's replicated spans
 * (storage/keys.ts replicatedSpans: replicated range-ID-local state, range-
 * local keys, user data), read from one engine snapshot taken right after
 * the ComputeChecksum command applied — so all replicas hash the same
 * applied index and must produce the same hex string.
 *
 *   hash = xxh64( Σ over entries in key order: len(key):u32be key len(value):u32be value )
 */
import xxhash from 'xxhash-wasm';
import type { Reader } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { replicatedSpans } from '../../storage/keys.js';
import type { RangeDescriptor } from './api.js';

const hasher = await xxhash();

/** Engine-key spans holding the range's replicated data (MVCC-encoded bounds of the user-key spans). */
export function replicatedEngineSpans(desc: RangeDescriptor): { gte: Buffer; lt: Buffer }[] {
  return replicatedSpans(desc.rangeId, desc.startKey, desc.endKey).map((s) => ({ gte: encodeMvccKey(s.key), lt: encodeMvccKey(s.endKey) }));
}

export async function computeRangeChecksum(r: Reader, desc: RangeDescriptor): Promise<string> {
  const h = hasher.create64(0n);
  const len = Buffer.allocUnsafe(4);
  for (const span of replicatedEngineSpans(desc)) {
    const it = r.iterator(span);
    try {
      for (;;) {
        const rows = await it.nextBatch(1024);
        if (rows.length === 0) break;
        for (const { key, value } of rows) {
          len.writeUInt32BE(key.length, 0);
          h.update(len);
          h.update(key);
          len.writeUInt32BE(value.length, 0);
          h.update(len);
          h.update(value);
        }
      }
    } finally {
      await it.close();
    }
  }
  return h.digest().toString(16).padStart(16, '0');
}
