/**
 * GCRequest's command and formats in isolation (src/kv/batcheval/cmd-gc.ts,
 * src/kv/api-codec.ts design note "session 7, MVCC GC"):
 *   - declareKeys: a write latch on each named key and on the range's GC
 *     threshold key;
 *   - evaluate: refuses a threshold not below the batch timestamp and a key
 *     outside the request's span (typed, nothing written); collects at the
 *     request's threshold; raises the stored threshold (key + side effect)
 *     only when it is higher than the range's, never lowers it;
 *   - codecs: the request, BatchTimestampBeforeGCError (typed on the far
 *     side, both timestamps), and a RaftCommand with and without the trailing
 *     gcThreshold (a command encoded before it existed decodes unchanged).
 */
import { describe, it, expect } from 'vitest';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { rangeGCThresholdKey } from '../../storage/keys.js';
import { emptyStats, mvccPut } from '../../storage/mvcc.js';
import { lookupCommand, type DeclaredSpan, type EvalContext, type SideEffectsBuilder } from '../../src/kv/batcheval/index.js';
import { BatchTimestampBeforeGCError, type GCRequest, type RangeDescriptor } from '../../src/kv/api.js';
import { decodeBatchRequest, decodeBatchResult, decodeRaftCommand, decodeTimestamp, encodeBatchRequest, encodeBatchResult, encodeRaftCommand, type RaftCommand } from '../../src/kv/api-codec.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import { rawVersionCount } from './support.js';

const T = (wall: number): Timestamp => ({ wall, logical: 0 });
const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');
const desc: RangeDescriptor = { rangeId: 7, startKey: k(''), endKey: k('z'), replicas: [{ nodeId: 1, storeId: 1, replicaId: 1, type: 0 }], nextReplicaId: 2, generation: 1 };

function ctx(gcThreshold: Timestamp): EvalContext & { sideEffects: SideEffectsBuilder } {
  return { rangeId: 7, desc, lease: null, stats: emptyStats(), sideEffects: {}, raftTerm: () => 1, gcThreshold };
}

const gcReq = (threshold: Timestamp, keys: Buffer[]): GCRequest => ({ kind: 'gc', key: k(''), endKey: k('z'), threshold, keys });

async function codeOf(p: unknown): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return (e as CairnError).code;
  }
}

describe('GCRequest (cmd-gc.ts)', () => {
  it('declares a write latch on each key and on the GC threshold key', () => {
    const out: DeclaredSpan[] = [];
    lookupCommand('gc').declareKeys({ rangeId: 7, timestamp: T(100) }, gcReq(T(10), [k('a'), k('b')]), desc, out);
    expect(out).toEqual([
      { key: k('a'), endKey: null, write: true },
      { key: k('b'), endKey: null, write: true },
      { key: rangeGCThresholdKey(7), endKey: null, write: true },
    ]);
  });

  it('refuses a threshold at or above the batch timestamp and keys outside its span; collects and raises, never lowers', async () => {
    const e = new MemoryEngine();
    const w = e.newBatch();
    for (const wall of [1, 2, 3]) mvccPut(w, k('a'), T(wall), Buffer.from(`v${wall}`));
    await e.write(w);
    const cmd = lookupCommand('gc');

    const b1 = e.newBatch();
    expect(await codeOf(cmd.evaluate(ctx(ZERO_TIMESTAMP), b1 as never, { rangeId: 7, timestamp: T(5) }, gcReq(T(5), [k('a')])))).toBe('kv.invalid_gc_threshold');
    expect(await codeOf(cmd.evaluate(ctx(ZERO_TIMESTAMP), b1 as never, { rangeId: 7, timestamp: T(50) }, { ...gcReq(T(5), [Buffer.from('\x91')]) }))).toBe('kv.invalid_gc_request');
    expect(b1.count).toBe(0);

    // Above the range's threshold: collects v1 (shadowed by v2 ≤ 2), writes the threshold, reports it.
    const c2 = ctx(T(1));
    const b2 = e.newBatch();
    await cmd.evaluate(c2, b2 as never, { rangeId: 7, timestamp: T(50) }, gcReq(T(2), [k('a')]));
    expect(c2.sideEffects.gcThreshold).toEqual(T(2));
    expect(c2.stats.valCount).toBe(-1);
    await e.write(b2);
    expect(await rawVersionCount(e, k('a'))).toBe(2);
    expect(decodeTimestamp(e.getSync(encodeMvccKey(rangeGCThresholdKey(7))) as Buffer)).toEqual(T(2));

    // Below the range's (higher) threshold: still collects at its own, leaves the stored threshold alone.
    const w3 = e.newBatch();
    mvccPut(w3, k('b'), T(1), Buffer.from('b1'));
    mvccPut(w3, k('b'), T(2), Buffer.from('b2'));
    await e.write(w3);
    const c4 = ctx(T(9));
    const b4 = e.newBatch();
    await cmd.evaluate(c4, b4 as never, { rangeId: 7, timestamp: T(50) }, gcReq(T(3), [k('b')]));
    expect(c4.sideEffects.gcThreshold).toBeUndefined();
    await e.write(b4);
    expect(await rawVersionCount(e, k('b'))).toBe(1);
    expect(decodeTimestamp(e.getSync(encodeMvccKey(rangeGCThresholdKey(7))) as Buffer)).toEqual(T(2));
  });
});

describe('GC formats (api-codec.ts)', () => {
  it('round-trips a GCRequest in a batch', () => {
    const ba = { header: { rangeId: 7, timestamp: T(100) }, requests: [gcReq({ wall: 42, logical: 3 }, [k('a'), k('b')])] };
    const back = decodeBatchRequest(encodeBatchRequest(ba));
    expect(back.requests).toEqual(ba.requests);
  });

  it('carries BatchTimestampBeforeGCError typed, with both timestamps, not retryable, 22023', () => {
    const res = decodeBatchResult(encodeBatchResult({ ok: false, error: new BatchTimestampBeforeGCError(7, T(5), { wall: 9, logical: 1 }) }));
    expect(res.ok).toBe(false);
    const err = (res as { error: CairnError }).error;
    expect(err).toBeInstanceOf(BatchTimestampBeforeGCError);
    expect(err.code).toBe('kv.batch_timestamp_before_gc');
    expect(err.retryable).toBe(false);
    expect(err.sqlState).toBe('22023');
    expect((err as BatchTimestampBeforeGCError).timestamp).toEqual(T(5));
    expect((err as BatchTimestampBeforeGCError).threshold).toEqual({ wall: 9, logical: 1 });
    expect(err.message).toContain('must be after replica GC threshold');
  });

  it('a RaftCommand carries gcThreshold as an optional trailing field; one without it encodes as before', () => {
    const base: RaftCommand = { cmdId: 9, leaseSeq: 2, maxLeaseIndex: 5, isLeaseRequest: false, prevLease: null, repr: Buffer.from([1, 2, 3]), stats: emptyStats(), sideEffects: {} };
    const plain = encodeRaftCommand(base);
    expect(decodeRaftCommand(plain)).toEqual(base);
    const withGc = encodeRaftCommand({ ...base, sideEffects: { gcThreshold: { wall: 77, logical: 2 } } });
    expect(withGc.subarray(0, plain.length)).toEqual(plain);
    expect(decodeRaftCommand(withGc).sideEffects).toEqual({ gcThreshold: { wall: 77, logical: 2 } });
  });
});
