/**
 * Write pipelining, the pure parts: TxnPipeliner (client/txn-pipeliner.ts)
 * against a simple model under random operations (fast-check), the header
 * flag's wire round trip (api-codec.ts), and which batches the replica may
 * answer before they apply (replica.ts canUseAsyncConsensus) and which of an
 * EndTxn's in-flight writes its own batch proves (dropProvenInFlightWrites).
 * CockroachDB's txnPipeliner: chainToInFlightWrites, canUseAsyncConsensus.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { TxnPipeliner, IN_FLIGHT_WRITE_OVERHEAD, isIntentMissing, AsyncWriteFailureError } from '../../src/kv/client/txn-pipeliner.js';
import { canUseAsyncConsensus, dropProvenInFlightWrites } from '../../src/kv/replica.js';
import { decodeBatchRequest, encodeBatchRequest } from '../../src/kv/api-codec.js';
import type { BatchRequest, Request } from '../../src/kv/api.js';
import { IntentMissingError, type InFlightWrite } from '../../src/kv/txn-api.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { Txn } from '../../storage/mvcc.js';

const k = (i: number): Buffer => Buffer.from(`k${String(i).padStart(3, '0')}`);
const txnId = Buffer.alloc(16, 7);
const TXN: Txn = { id: txnId, epoch: 2, writeTimestamp: { wall: 100, logical: 0 }, minTimestamp: { wall: 100, logical: 0 }, sequence: 3, key: k(0), priority: 1 };

type Op =
  | { op: 'write'; keys: number[]; async: boolean }
  | { op: 'get'; key: number }
  | { op: 'scan'; from: number; to: number }
  | { op: 'rollback'; back: number }
  | { op: 'restart' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('write' as const), keys: fc.uniqueArray(fc.nat(20), { minLength: 1, maxLength: 4 }), async: fc.boolean() }),
  fc.record({ op: fc.constant('get' as const), key: fc.nat(20) }),
  fc.record({ op: fc.constant('scan' as const), from: fc.nat(20), to: fc.nat(21) }),
  fc.record({ op: fc.constant('rollback' as const), back: fc.nat(3) }),
  fc.record({ op: fc.constant('restart' as const) }),
);

describe('TxnPipeliner', () => {
  it('proves exactly the in-flight writes a batch touches, and tracks what a model tracks (random operations)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.integer({ min: 0, max: 400 }), (ops, budget) => {
        const p = new TxnPipeliner({ enabled: true, maxInFlightBytes: budget });
        const model = new Map<number, number>(); // key → seq of its in-flight write
        let seq = 0;
        for (const o of ops) {
          if (o.op === 'restart') {
            p.clear();
            model.clear();
            continue;
          }
          if (o.op === 'rollback') {
            const sp = Math.max(0, seq - o.back);
            p.rollbackTo(sp);
            for (const [key, s] of model) if (s > sp) model.delete(key);
            continue;
          }
          const reqs: Request[] =
            o.op === 'write' ? o.keys.map((i) => ({ kind: 'put', key: k(i), value: Buffer.from('v') })) : o.op === 'get' ? [{ kind: 'get', key: k(o.key) }] : [{ kind: 'scan', key: k(o.from), endKey: k(o.to), maxKeys: 0 }];
          const touched = new Set<number>();
          for (const [key] of model) {
            if (o.op === 'write' && o.keys.includes(key)) touched.add(key);
            if (o.op === 'get' && o.key === key) touched.add(key);
            if (o.op === 'scan' && key >= o.from && key < o.to) touched.add(key);
          }
          const chained = p.chain(reqs, { id: txnId, epoch: 1 }, false);
          // One QueryIntent per touched in-flight write, in front, naming its key, seq, txn and epoch.
          expect(chained.proved.map((w) => w.key.toString()).sort()).toEqual([...touched].map((i) => k(i).toString()).sort());
          expect(chained.requests.length).toBe(reqs.length + touched.size);
          chained.requests.slice(0, touched.size).forEach((q, i) => {
            const w = chained.proved[i] as InFlightWrite;
            expect(q).toEqual({ kind: 'queryIntent', key: w.key, txnId, epoch: 1, seq: model.get(Number(w.key.toString().slice(1))), errorIfMissing: true });
          });
          const write = o.op === 'write';
          if (write) seq++;
          // The budget: a write batch may go async iff the set stays within it.
          const can = write && p.canPipeline(reqs);
          if (write) {
            const added = o.keys.filter((i) => !model.has(i)).reduce((a, i) => a + k(i).length + IN_FLIGHT_WRITE_OVERHEAD, 0);
            expect(can).toBe(p.inFlightBytes + added <= budget);
          }
          const goAsync = can && o.op === 'write' && o.async;
          p.onSuccess(chained.proved, goAsync ? reqs : null, seq);
          for (const i of touched) model.delete(i);
          if (goAsync && o.op === 'write') for (const i of o.keys) model.set(i, seq);
          expect(p.size).toBe(model.size);
          expect(p.inFlightBytes).toBe([...model.keys()].reduce((a, i) => a + k(i).length + IN_FLIGHT_WRITE_OVERHEAD, 0));
          expect(p.inFlightBytes).toBeLessThanOrEqual(Math.max(budget, 0));
        }
        // The commit proves everything left.
        const all = p.chain([], { id: txnId, epoch: 1 }, true);
        expect(all.proved.map((w) => `${w.key.toString()}@${w.seq}`).sort()).toEqual([...model].map(([i, s]) => `${k(i).toString()}@${s}`).sort());
      }),
      { numRuns: 300 },
    );
  });

  it('never pipelines when disabled, nor ranged writes, nor reads', () => {
    const off = new TxnPipeliner({ enabled: false, maxInFlightBytes: 1 << 20 });
    expect(off.canPipeline([{ kind: 'put', key: k(1), value: Buffer.alloc(1) }])).toBe(false);
    const on = new TxnPipeliner({ enabled: true, maxInFlightBytes: 1 << 20 });
    expect(on.canPipeline([{ kind: 'put', key: k(1), value: Buffer.alloc(1) }, { kind: 'cput', key: k(2), value: Buffer.alloc(1), expected: null, allowIfDoesNotExist: false }, { kind: 'delete', key: k(3) }])).toBe(true);
    expect(on.canPipeline([{ kind: 'deleteRange', key: k(1), endKey: k(5), returnKeys: true }])).toBe(false);
    expect(on.canPipeline([{ kind: 'get', key: k(1) }])).toBe(false);
    expect(on.canPipeline([])).toBe(false);
  });

  it('a scan proves the in-flight writes inside its span only (start inclusive, end exclusive)', () => {
    const p = new TxnPipeliner({ enabled: true, maxInFlightBytes: 1 << 20 });
    p.onSuccess([], [1, 3, 5, 7].map((i) => ({ kind: 'put', key: k(i), value: Buffer.alloc(1) })), 4);
    const c = p.chain([{ kind: 'reverseScan', key: k(3), endKey: k(7), maxKeys: 0 }], { id: txnId, epoch: 0 }, false);
    expect(c.proved.map((w) => w.key.toString()).sort((a, b) => compareBytes(Buffer.from(a), Buffer.from(b)))).toEqual(['k003', 'k005']);
    expect(c.requests.map((q) => q.kind)).toEqual(['queryIntent', 'queryIntent', 'reverseScan']);
  });

  it('a missing chained write is a retryable RETRY_ASYNC_WRITE_FAILURE', () => {
    expect(isIntentMissing(new IntentMissingError(k(1)))).toBe(true);
    const e = new AsyncWriteFailureError('lost');
    expect(e.retryable).toBe(true);
    expect(e.sqlState).toBe('40001');
    expect(e.message).toContain('RETRY_ASYNC_WRITE_FAILURE');
  });
});

describe('async consensus on the wire and on the replica', () => {
  it('the header flag round-trips (absent when unset)', () => {
    const reqs: Request[] = [{ kind: 'put', key: k(1), value: Buffer.from('v') }];
    const on: BatchRequest = { header: { rangeId: 3, replicaId: 0, timestamp: { wall: 5, logical: 1 }, txn: TXN, asyncConsensus: true }, requests: reqs };
    expect(decodeBatchRequest(encodeBatchRequest(on))).toEqual(on);
    const off: BatchRequest = { header: { rangeId: 3, replicaId: 0, timestamp: { wall: 5, logical: 1 } }, requests: reqs };
    const dec = decodeBatchRequest(encodeBatchRequest(off));
    expect(dec).toEqual(off);
    expect('asyncConsensus' in dec.header).toBe(false);
  });

  it('only a transactional batch of point intent writes (and QueryIntents) may be answered before it applies', () => {
    const h = { rangeId: 1, timestamp: { wall: 1, logical: 0 }, txn: TXN, asyncConsensus: true };
    const put: Request = { kind: 'put', key: k(1), value: Buffer.alloc(1) };
    const qi: Request = { kind: 'queryIntent', key: k(1), txnId, epoch: 2, seq: 1, errorIfMissing: true };
    const ok = (reqs: Request[], header: BatchRequest['header'] = h): boolean => canUseAsyncConsensus({ header, requests: reqs }, reqs);
    expect(ok([put])).toBe(true);
    expect(ok([qi, put, { kind: 'delete', key: k(2) }, { kind: 'cput', key: k(3), value: Buffer.alloc(1), expected: null, allowIfDoesNotExist: false }])).toBe(true);
    expect(ok([qi])).toBe(false); // nothing to write
    expect(ok([put], { ...h, asyncConsensus: false })).toBe(false);
    expect(ok([put], { rangeId: 1, timestamp: h.timestamp, asyncConsensus: true })).toBe(false); // not transactional
    expect(ok([put, { kind: 'endTxn', key: k(1), commit: true, inFlightWrites: [], lockSpans: [] }])).toBe(false);
    expect(ok([put, { kind: 'deleteRange', key: k(1), endKey: k(9), returnKeys: false }])).toBe(false);
    expect(ok([put, { kind: 'get', key: k(1), lock: 'exclusive' }])).toBe(false);
    expect(ok([put, { kind: 'get', key: k(5) }])).toBe(false);
  });

  it("an EndTxn's in-flight writes proven by QueryIntents of its own batch (same txn, epoch, seq) leave its list", () => {
    const end = (writes: InFlightWrite[]): Request => ({ kind: 'endTxn', key: k(0), commit: true, inFlightWrites: writes, lockSpans: [] });
    const qi = (i: number, seq: number, over: Partial<{ epoch: number; errorIfMissing: boolean; txnId: Buffer }> = {}): Request => ({ kind: 'queryIntent', key: k(i), txnId, epoch: 2, seq, errorIfMissing: true, ...over });
    const writes = [{ key: k(1), seq: 1 }, { key: k(2), seq: 2 }, { key: k(3), seq: 3 }];
    const out = dropProvenInFlightWrites([qi(1, 1), qi(2, 5), qi(3, 3, { epoch: 1 }), end(writes)], TXN);
    expect((out[3] as unknown as { inFlightWrites: InFlightWrite[] }).inFlightWrites).toEqual([{ key: k(2), seq: 2 }, { key: k(3), seq: 3 }]);
    const notStrict = dropProvenInFlightWrites([qi(1, 1, { errorIfMissing: false }), end(writes)], TXN);
    expect((notStrict[1] as unknown as { inFlightWrites: InFlightWrite[] }).inFlightWrites).toEqual(writes);
    const otherTxn = dropProvenInFlightWrites([qi(1, 1, { txnId: Buffer.alloc(16, 1) }), end(writes)], TXN);
    expect((otherTxn[1] as unknown as { inFlightWrites: InFlightWrite[] }).inFlightWrites).toEqual(writes);
    const noEnd: Request[] = [qi(1, 1)];
    expect(dropProvenInFlightWrites(noEnd, TXN)).toBe(noEnd);
  });
});
